// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @notice Devnet target of `join_tournament` and `fund_tournament`, paid in `token`.
contract Tournament {
    using SafeERC20 for IERC20;

    IERC20 public immutable token;
    uint256 public immutable entryPrice;
    uint256 public prizePool;
    mapping(address => bool) public joined;

    event Joined(address indexed player, uint256 paid);
    event Funded(address indexed funder, uint256 amount);

    error AlreadyJoined();

    constructor(IERC20 token_, uint256 entryPrice_) {
        token = token_;
        entryPrice = entryPrice_;
    }

    function join(address player) external {
        if (joined[player]) revert AlreadyJoined();
        joined[player] = true;
        token.safeTransferFrom(msg.sender, address(this), entryPrice);
        prizePool += entryPrice;
        emit Joined(player, entryPrice);
    }

    function fund(uint256 amount) external {
        token.safeTransferFrom(msg.sender, address(this), amount);
        prizePool += amount;
        emit Funded(msg.sender, amount);
    }
}
