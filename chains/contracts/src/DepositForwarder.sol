// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @notice One payment's deposit address. Deployed by the factory with CREATE2 (salt from the
/// payment's id), so its address is known before it exists; payers send tokens or native coin to it,
/// and only the factory can move them on.
contract DepositForwarder {
    using SafeERC20 for IERC20;

    address public immutable factory;

    error OnlyFactory();
    error NativeTransferFailed();

    constructor() {
        factory = msg.sender;
    }

    receive() external payable {}

    /// @notice Send this forwarder's whole balance of `token` (address(0): native coin) to `to`.
    function sweep(address token, address payable to) external returns (uint256 amount) {
        if (msg.sender != factory) revert OnlyFactory();
        if (token == address(0)) {
            amount = address(this).balance;
            if (amount > 0) {
                (bool ok,) = to.call{value: amount}("");
                if (!ok) revert NativeTransferFailed();
            }
        } else {
            amount = IERC20(token).balanceOf(address(this));
            if (amount > 0) IERC20(token).safeTransfer(to, amount);
        }
    }
}
