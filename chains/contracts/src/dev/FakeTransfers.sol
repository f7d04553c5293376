// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice Tests only: a "token" that emits ERC-20 `Transfer` events and moves nothing, as a spam or fake
/// token does, to show that the service never spends the vault's gas on a token it does not list.
contract FakeTransfers {
    event Transfer(address indexed from, address indexed to, uint256 value);

    function spam(address to, uint256 value, uint256 times) external {
        for (uint256 i = 0; i < times; i++) {
            emit Transfer(msg.sender, to, value);
        }
    }
}
