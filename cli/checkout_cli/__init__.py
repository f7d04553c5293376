"""checkout-cli: the checkout service from a developer's laptop, through its public API."""
