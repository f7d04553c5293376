// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

/// @notice Makes one contract order's call for its caller, in one transaction: takes `amount` of `token` from
/// the caller, allows `spender` exactly that, calls `target` with `data` (and the native value sent along),
/// withdraws the allowance and gives the caller back whatever the call did not spend. The call succeeds as a
/// whole or reverts as a whole, so the caller's tokens never stay here.
///
/// It has no owner and holds nothing between calls: anyone may call it, and only the caller's own tokens move,
/// in the caller's own call, so a standing allowance given to it lets nothing but the giver's calls spend it.
/// Nor can the call itself spend it: a target where the caller has given this contract an allowance (a token's
/// `transferFrom(caller, ...)` made by this contract would draw on it) is refused, as is calling back in.
/// `msg.sender` of the order's call is this contract, as it is the relay provider's multicaller on that path:
/// the NFT, tournament and fund calls name their beneficiary as an argument.
contract CallRouter is ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    error CallFailed(bytes reason);
    error TargetHoldsCallerAllowance(address target);

    function call(address token, uint256 amount, address spender, address target, bytes calldata data)
        external
        payable
        nonReentrant
        returns (bytes memory result)
    {
        if (_allowsThis(target)) revert TargetHoldsCallerAllowance(target);
        uint256 before;
        if (amount > 0) {
            before = IERC20(token).balanceOf(address(this));
            IERC20(token).safeTransferFrom(msg.sender, address(this), amount);
            IERC20(token).forceApprove(spender, amount);
        }
        bool ok;
        (ok, result) = target.call{value: msg.value}(data);
        if (!ok) revert CallFailed(result);
        if (amount > 0) {
            IERC20(token).forceApprove(spender, 0);
            uint256 left = IERC20(token).balanceOf(address(this)) - before;
            if (left > 0) IERC20(token).safeTransfer(msg.sender, left);
        }
    }

    /// Whether `target` answers `allowance(caller, this)` with more than nothing (a contract without that
    /// function, or without code, does not).
    function _allowsThis(address target) private view returns (bool) {
        (bool ok, bytes memory answer) =
            target.staticcall(abi.encodeCall(IERC20.allowance, (msg.sender, address(this))));
        return ok && answer.length >= 32 && abi.decode(answer, (uint256)) > 0;
    }
}
