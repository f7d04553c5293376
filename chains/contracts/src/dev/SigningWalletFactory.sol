// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Create2} from "@openzeppelin/contracts/utils/Create2.sol";
import {SigningWallet} from "./SigningWallet.sol";

/// @notice Tests only: makes SigningWallets at addresses known before they exist (CREATE2 of owner and salt), as
/// an ERC-4337 account factory does, so a wallet can sign (ERC-6492) before it is deployed. Deploying one that
/// exists returns it, as the factories ERC-6492 has in mind do.
contract SigningWalletFactory {
    event Deployed(address indexed wallet, address indexed owner, bytes32 salt);

    function deploy(address owner, bytes32 salt) external returns (address wallet) {
        wallet = addressOf(owner, salt);
        if (wallet.code.length > 0) return wallet;
        wallet = address(new SigningWallet{salt: salt}(owner));
        emit Deployed(wallet, owner, salt);
    }

    function addressOf(address owner, bytes32 salt) public view returns (address) {
        bytes32 code = keccak256(abi.encodePacked(type(SigningWallet).creationCode, abi.encode(owner)));
        return Create2.computeAddress(salt, code);
    }
}
