from django.core.management.base import BaseCommand, CommandError

from chains.devnet import DevnetError, deploy_all, token_list_path


class Command(BaseCommand):
    help = "Deploy the contracts and devnet tokens on every (fresh) devnet of the registry; write VAR_DIR/devnets.json."

    def handle(self, *args, **options):
        try:
            deployments = deploy_all()
        except DevnetError as exc:
            raise CommandError(str(exc)) from exc
        for deployment in deployments:
            contracts = deployment["contracts"]
            self.stdout.write(
                f"{deployment['name']} (chain {deployment['chain_id']}): {deployment['rpc_url']}  "
                f"factory {contracts['DepositFactory']}  dUSDC {contracts['dUSDC']}  dWETH {contracts['dWETH']}"
            )
        self.stdout.write(f"Devnet token list: {token_list_path()}")
