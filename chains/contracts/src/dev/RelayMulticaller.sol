// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @notice Devnet stand-in of the relay provider's multicaller on the destination chain: a fill that carries
/// calls (Relay's quote `txs`, each `{to, value, data}`: https://docs.relay.link/references/api/get-quote-v2)
/// brings the output tokens here and makes the calls from here, in one transaction, so `msg.sender` of each
/// call is this contract, never the buyer (https://docs.relay.link/references/api/api_guides/calling-integration-guide).
/// A call that reverts reverts the whole fill, which the provider then refunds on the origin chain.
contract RelayMulticaller {
    using SafeERC20 for IERC20;

    struct Call {
        address to;
        uint256 value;
        bytes data;
    }

    error CallFailed(uint256 index, bytes returnData);

    function fill(address token, uint256 amount, Call[] calldata calls) external payable {
        if (token != address(0)) IERC20(token).safeTransferFrom(msg.sender, address(this), amount);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool ok, bytes memory returned) = calls[i].to.call{value: calls[i].value}(calls[i].data);
            if (!ok) revert CallFailed(i, returned);
        }
    }
}
