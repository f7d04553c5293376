"""Orders the hosted checkout created before 0011 named their tokens by address only: fill `metadata.srcToken`
and `metadata.dstToken` (the contract's Token shape) from the registry, as orders_create now does."""

from django.db import migrations


def shape(token) -> dict:
    return {
        "chainId": token.chain_id,
        "address": token.address,
        "symbol": token.symbol,
        "name": token.name,
        "decimals": token.decimals,
        "metadata": {"logoURI": token.logo_uri} if token.logo_uri else {},
    }


def fill_token_shapes(apps, schema_editor):
    Order = apps.get_model("orders", "Order")
    Token = apps.get_model("chains", "Token")
    tokens = {(t.chain_id, t.address.lower()): t for t in Token.objects.all()}
    changed = []
    for order in Order.objects.only(
        "id", "metadata", "src_chain", "dst_chain", "src_token_address", "dst_token_address"
    ).iterator(chunk_size=1000):
        metadata = dict(order.metadata or {})
        for side, chain, address in (("srcToken", order.src_chain, order.src_token_address),
                                     ("dstToken", order.dst_chain, order.dst_token_address)):
            token = tokens.get((chain, address.lower()))
            if side not in metadata and token is not None:
                metadata[side] = shape(token)
        if metadata != order.metadata:
            order.metadata = metadata
            changed.append(order)
    Order.objects.bulk_update(changed, ["metadata"], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("orders", "0010_encrypt_personal_data"),
        ("chains", "0006_reorg_safe_deposits_and_incidents"),
    ]

    operations = [migrations.RunPython(fill_token_shapes, migrations.RunPython.noop)]
