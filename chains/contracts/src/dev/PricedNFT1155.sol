// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ERC1155} from "@openzeppelin/contracts/token/ERC1155/ERC1155.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @notice Devnet target of `mint_nft` (erc1155): each unit costs `price` of `paymentToken`, pulled from the caller.
contract PricedNFT1155 is ERC1155 {
    using SafeERC20 for IERC20;

    IERC20 public immutable paymentToken;
    uint256 public immutable price;

    constructor(IERC20 paymentToken_, uint256 price_) ERC1155("") {
        paymentToken = paymentToken_;
        price = price_;
    }

    function mint(address to, uint256 id, uint256 amount) external {
        paymentToken.safeTransferFrom(msg.sender, address(this), price * amount);
        _mint(to, id, amount, "");
    }
}
