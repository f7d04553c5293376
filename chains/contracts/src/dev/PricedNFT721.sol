// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @notice Devnet target of `mint_nft` (erc721): minting costs `price` of `paymentToken`, pulled from the caller.
contract PricedNFT721 is ERC721 {
    using SafeERC20 for IERC20;

    IERC20 public immutable paymentToken;
    uint256 public immutable price;
    uint256 public nextTokenId = 1;

    constructor(IERC20 paymentToken_, uint256 price_) ERC721("Devnet NFT", "DNFT") {
        paymentToken = paymentToken_;
        price = price_;
    }

    function mint(address to) external returns (uint256 tokenId) {
        paymentToken.safeTransferFrom(msg.sender, address(this), price);
        tokenId = nextTokenId++;
        _safeMint(to, tokenId);
    }
}
