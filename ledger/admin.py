"""The ledger for staff: postings with their entries, entries filtered by account, chain, token and time,
accounts with their balance, and the reconciliation runs (a difference stays on every admin page, as a
banner, until a clean run or a person closes it)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from core.admin import ReadOnlyModelAdmin, moment, short_hex
from ledger.models import Account, BalanceTransaction, Entry, Posting, ReconcileRun
from ledger.postings import account_balance


class EntryInline(admin.TabularInline):
    model = Entry
    fields = ("account", "side", "amount")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Posting)
class PostingAdmin(ReadOnlyModelAdmin):
    list_display = ("key", "kind", "chain_id", "block_number", "owner", "transaction", "when")
    list_filter = ("kind", "chain_id", "created_at")
    search_fields = ("=key", "key", "owner", "=tx_hash", "=order_id")
    date_hierarchy = "created_at"
    inlines = [EntryInline]
    fields = ("key", "kind", "order_id", "owner", "tx_hash", "chain_id", "block_number", "memo", "created_at")
    readonly_fields = fields

    @admin.display(description="transaction")
    def transaction(self, posting: Posting):
        return short_hex(posting.tx_hash)

    @admin.display(description="created", ordering="created_at")
    def when(self, posting: Posting):
        return moment(posting.created_at)


@admin.register(Entry)
class EntryAdmin(ReadOnlyModelAdmin):
    """The ledger page: every entry, by account, chain, token and time."""

    list_display = ("when", "posting_link", "account_kind", "address", "chain", "token", "side", "amount")
    list_filter = ("account__kind", "account__chain_id", "account__token", "side", "posting__created_at")
    search_fields = ("=account__ref", "=posting__key", "=posting__tx_hash", "=posting__order_id")
    list_select_related = ("posting", "account")
    date_hierarchy = "posting__created_at"

    @admin.display(description="created", ordering="posting__created_at")
    def when(self, entry: Entry):
        return moment(entry.posting.created_at)

    @admin.display(description="posting")
    def posting_link(self, entry: Entry):
        return format_html('<a href="../posting/{}/change/">{}</a>', entry.posting_id, entry.posting.key)

    @admin.display(description="account", ordering="account__kind")
    def account_kind(self, entry: Entry):
        return entry.account.kind

    @admin.display(description="address")
    def address(self, entry: Entry):
        return short_hex(entry.account.ref)

    @admin.display(description="chain", ordering="account__chain_id")
    def chain(self, entry: Entry):
        return entry.account.chain_id

    @admin.display(description="token")
    def token(self, entry: Entry):
        return short_hex(entry.account.token)


@admin.register(Account)
class AccountAdmin(ReadOnlyModelAdmin):
    list_display = ("kind", "ref", "chain_id", "token")
    list_filter = ("kind", "chain_id", "token")
    search_fields = ("=ref", "ref")
    fields = ("kind", "ref", "chain_id", "token", "balance")
    readonly_fields = fields

    @admin.display(description="balance (debits less credits, base units)")
    def balance(self, account: Account):
        return account_balance(account)


@admin.register(ReconcileRun)
class ReconcileRunAdmin(ReadOnlyModelAdmin):
    list_display = ("created", "chain_id", "block_number", "outcome", "resolved_at", "resolved_by")
    list_filter = ("chain_id", "resolved_at")
    fields = (
        "chain_id",
        "block_number",
        "block_hash",
        "created_at",
        "error",
        "table",
        "resolved_at",
        "resolved_by",
    )
    readonly_fields = fields
    actions = ["resolve"]

    @admin.display(description="run", ordering="created_at")
    def created(self, run: ReconcileRun):
        return moment(run.created_at)

    @admin.display(description="outcome")
    def outcome(self, run: ReconcileRun):
        if run.error:
            return format_html('<span class="ledger-bad">could not run: {}</span>', run.error)
        if run.differences:
            return format_html('<span class="ledger-bad">{} difference(s)</span>', run.differences)
        return "no difference"

    @admin.display(description="balances")
    def table(self, run: ReconcileRun):
        head = mark_safe(
            "<tr><th>account</th><th>address</th><th>token</th><th>expected</th><th>in flight</th>"
            "<th>actual</th><th>difference</th></tr>"
        )
        body = format_html_join(
            "",
            '<tr class="{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>',
            (
                (
                    "ledger-bad" if int(r["difference"]) else "",
                    r["kind"],
                    short_hex(r["address"]),
                    short_hex(r["token"]),
                    r["expected"],
                    r["in_flight"],
                    r["actual"],
                    r["difference"],
                )
                for r in run.rows
            ),
        )
        return format_html('<div class="ledger-table"><table>{}{}</table></div>', head, body)

    @admin.action(description="Mark resolved (the difference is explained and, where needed, adjusted)")
    def resolve(self, request, queryset):
        done = queryset.filter(resolved_at__isnull=True).update(
            resolved_at=timezone.now(), resolved_by=request.user.get_username()
        )
        self.message_user(request, f"{done} run(s) marked resolved.", messages.SUCCESS)


@admin.register(BalanceTransaction)
class BalanceTransactionAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "organization_id", "type", "chain_id", "gross", "fee", "net", "source_id", "when")
    list_filter = ("type", "chain_id", "created_at")
    search_fields = ("=id", "=organization_id", "=source_id", "=transaction_id", "=session_id")
    date_hierarchy = "created_at"

    @admin.display(description="created", ordering="created_at")
    def when(self, row: BalanceTransaction):
        return moment(row.created_at)
