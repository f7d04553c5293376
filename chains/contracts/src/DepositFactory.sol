// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {DepositForwarder} from "./DepositForwarder.sol";

/// @notice Deploys per-payment forwarders with CREATE2 and sweeps them; every state change is the
/// owner's (the service's vault key).
contract DepositFactory {
    address public owner;

    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    event ForwarderDeployed(bytes32 indexed salt, address forwarder);
    event Swept(bytes32 indexed salt, address indexed token, address indexed to, uint256 amount);

    error OnlyOwner();
    error ZeroAddress();

    constructor(address initialOwner) {
        if (initialOwner == address(0)) revert ZeroAddress();
        owner = initialOwner;
        emit OwnershipTransferred(address(0), initialOwner);
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert OnlyOwner();
        _;
    }

    function transferOwnership(address newOwner) external onlyOwner {
        if (newOwner == address(0)) revert ZeroAddress();
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    /// @notice keccak256 of the forwarder's init code: with this factory's address and a salt, it
    /// gives the forwarder's address (EIP-1014).
    function forwarderInitCodeHash() public pure returns (bytes32) {
        return keccak256(type(DepositForwarder).creationCode);
    }

    function forwarderAddress(bytes32 salt) public view returns (address) {
        bytes32 digest = keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, forwarderInitCodeHash()));
        return address(uint160(uint256(digest)));
    }

    function deploy(bytes32 salt) public onlyOwner returns (address forwarder) {
        forwarder = forwarderAddress(salt);
        if (forwarder.code.length == 0) {
            new DepositForwarder{salt: salt}();
            emit ForwarderDeployed(salt, forwarder);
        }
    }

    /// @notice Deploy the forwarder if needed, then send its whole balance of `token` to `to`.
    function sweep(bytes32 salt, address token, address payable to) external onlyOwner returns (uint256 amount) {
        if (to == address(0)) revert ZeroAddress();
        address payable forwarder = payable(deploy(salt));
        amount = DepositForwarder(forwarder).sweep(token, to);
        emit Swept(salt, token, to, amount);
    }
}
