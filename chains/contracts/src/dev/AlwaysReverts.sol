// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice Devnet target whose every call fails: exercises the refund path.
contract AlwaysReverts {
    error Refused();

    fallback() external payable {
        revert Refused();
    }

    receive() external payable {
        revert Refused();
    }
}
