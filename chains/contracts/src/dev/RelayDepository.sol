// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @notice Devnet stand-in of the relay provider's depository (Relay's EVM depository: deposit methods as
/// documented at https://docs.relay.link/references/protocol/depository/architecture and the contract's
/// Solidity API at https://docs.relay.link/references/protocol/contracts/evm-depository). A deposit is tagged
/// with the quote's id and pulled from the caller with `transferFrom` (so it needs the caller's allowance),
/// and each emits the event the provider's oracle watches. Withdrawals by the allocator are not modelled:
/// the stand-in's solver fills from its own inventory, and refunds from this contract's owner.
contract RelayDepository {
    using SafeERC20 for IERC20;

    event RelayNativeDeposit(address from, uint256 amount, bytes32 id);
    event RelayErc20Deposit(address from, address token, uint256 amount, bytes32 id);

    address public immutable allocator;

    constructor(address allocator_) {
        allocator = allocator_;
    }

    function depositNative(address depositor, bytes32 id) external payable {
        emit RelayNativeDeposit(depositor == address(0) ? msg.sender : depositor, msg.value, id);
    }

    function depositErc20(address depositor, address token, uint256 amount, bytes32 id) external {
        IERC20(token).safeTransferFrom(msg.sender, address(this), amount);
        emit RelayErc20Deposit(depositor == address(0) ? msg.sender : depositor, token, amount, id);
    }

    /// @notice The stand-in's refund path: the allocator sends a deposit back (Relay refunds to `refundTo`).
    function refund(address token, address to, uint256 amount) external {
        require(msg.sender == allocator, "only the allocator");
        if (token == address(0)) {
            (bool ok,) = to.call{value: amount}("");
            require(ok, "native refund failed");
        } else {
            IERC20(token).safeTransfer(to, amount);
        }
    }
}
