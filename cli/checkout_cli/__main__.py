from checkout_cli.main import cli

cli()
