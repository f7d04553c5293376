// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice Tests and the rehearsal only: a contract wallet in its simplest form. It holds native coin and
/// pays by an internal CALL, as a Safe or an ERC-4337 account does, so the payment is in no transaction's
/// `value` to the payee: the watcher must see it by balance (or by traces).
contract ContractWallet {
    address public immutable owner;

    error OnlyOwner();
    error CallFailed();

    constructor() {
        owner = msg.sender;
    }

    receive() external payable {}

    /// @notice Send `amount` of native coin to each of `to`, in one transaction (several payments at once).
    function pay(address payable[] calldata to, uint256 amount) external {
        if (msg.sender != owner) revert OnlyOwner();
        for (uint256 i = 0; i < to.length; i++) {
            (bool ok,) = to[i].call{value: amount}("");
            if (!ok) revert CallFailed();
        }
    }
}
