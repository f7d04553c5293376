// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

/// @notice Many balances in one eth_call: of `token` (address(0): native coin) for each holder.
contract BalanceReader {
    function balancesOf(address token, address[] calldata holders) external view returns (uint256[] memory balances) {
        balances = new uint256[](holders.length);
        for (uint256 i = 0; i < holders.length; i++) {
            balances[i] = token == address(0) ? holders[i].balance : IERC20(token).balanceOf(holders[i]);
        }
    }
}
