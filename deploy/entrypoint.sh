#!/bin/sh
# The image's roles (Containerfile). Each names its metrics directory (METRICS_ROLE) and runs in the
# foreground as PID 1's child (tini), so a stop signal reaches it.
set -eu
role="${1:-web}"
[ "$#" -gt 0 ] && shift
export METRICS_ROLE="$role"
celery="celery -A config --quiet"  # no start-up banner
case "$role" in
  web)
    exec gunicorn -c config/gunicorn_conf.py config.wsgi:application "$@" ;;
  worker)   # settlements, expiries, sweeps' bookkeeping: no key (CELERY_CHAIN_QUEUE gives signing to `signer`)
    exec $celery worker -Q "${CELERY_TASK_DEFAULT_QUEUE:-celery}" -n "default@%h" \
      --concurrency "${WORKER_CONCURRENCY:-2}" --loglevel INFO "$@" ;;
  signer)   # the chains' queue: scans, signing, broadcasts, receipts; the only role given the keys
    exec $celery worker -Q "${CELERY_CHAIN_QUEUE:-chain}" -n "signer@%h" \
      --concurrency "${SIGNER_CONCURRENCY:-2}" --loglevel INFO "$@" ;;
  webhooks)
    exec $celery worker -Q "${CELERY_WEBHOOK_QUEUE:-webhooks}" -n "webhooks@%h" --pool threads \
      --concurrency "${WEBHOOK_CONCURRENCY:-16}" --prefetch-multiplier 4 --loglevel INFO "$@" ;;
  beat)
    exec $celery beat --loglevel INFO --schedule "$VAR_DIR/celerybeat-schedule" "$@" ;;
  migrate)  # the deploy step: the schema, then the chains and tokens the settings name
    python3 manage.py migrate --noinput
    exec python3 manage.py load_tokens ;;
  manage)
    exec python3 manage.py "$@" ;;
  *)
    echo "unknown role '$role': web, worker, signer, webhooks, beat, migrate or manage <command>" >&2
    exit 64 ;;
esac
