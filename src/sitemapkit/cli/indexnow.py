"""`sitemapkit indexnow`: submit added, changed and removed URLs with IndexNow, and set up its key."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import click

from sitemapkit.cli._output import (
    DiagnosticPrinter,
    error_line,
    fail,
    interruption,
    json_failure,
    plural,
    progress,
    safe_echo,
)
from sitemapkit.cli.options import connect_timeout, json_summary_option, timeout_option, user_agent_option
from sitemapkit.core.errors import InputError, PublishError, Terminated, UsageError
from sitemapkit.core.escape import for_terminal
from sitemapkit.generator.state import DEFAULT_STATE_PATH
from sitemapkit.publisher.indexnow import (
    DEFAULT_ENDPOINT,
    MAX_BATCH,
    BatchResult,
    IndexNowError,
    Site,
    SubmitResult,
    check_key,
    generate_key,
    mark_submitted,
    read_url_file,
    submit,
    submit_changes,
    verify_key,
    write_key_file,
)
from sitemapkit.reader.fetch import FetchOptions

KEY_ENV = "SITEMAPKIT_INDEXNOW_KEY"


@click.command()
@click.option("--since-last", is_flag=True, help="Submit what the builds changed since the last submission.")
@click.option(
    "--urls",
    "urls_file",
    metavar="FILE",
    help="Submit the URLs of FILE (one a line, or .csv/.jsonl; .gz works; '-' for standard input).",
)
@click.option("--key", envvar=KEY_ENV, metavar="KEY", help=f"The IndexNow key (or ${KEY_ENV}).")
@click.option(
    "--host",
    metavar="HOST",
    help="The site's host (www.example.com); an origin such as http://127.0.0.1:8080 sets the scheme.",
)
@click.option(
    "--key-location",
    metavar="URL",
    help="Where the key file is served, if not at https://HOST/KEY.txt; sent as keyLocation.",
)
@click.option(
    "--endpoint", default=DEFAULT_ENDPOINT, show_default=True, metavar="URL", help="IndexNow endpoint."
)
@click.option(
    "--state",
    "state_path",
    metavar="PATH",
    default=str(DEFAULT_STATE_PATH),
    show_default=True,
    help="The state database that `sitemapkit generate --state` keeps (for --since-last and --baseline).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, MAX_BATCH),
    default=MAX_BATCH,
    show_default=True,
    help="Most URLs a request.",
)
@click.option(
    "--max-retries",
    type=click.IntRange(0, 100),
    default=5,
    show_default=True,
    help="Further attempts of a request answered 429 or 5xx, or that got no answer (connection failure).",
)
@click.option(
    "--max-wait",
    type=click.FloatRange(0),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="Longest wait before a retry; a Retry-After asking for longer stops the run (resumable).",
)
@timeout_option
@user_agent_option
@click.option("--dry-run", is_flag=True, help="Show what would be sent; send nothing, record nothing.")
@json_summary_option
@click.option(
    "--new-key", is_flag=True, help="Make a new key and print it (with --out, also write its file)."
)
@click.option(
    "--out",
    "out_dir",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Write the key file KEY.txt into DIR (the site's root folder) and stop.",
)
@click.option(
    "--check-key", "check_key_only", is_flag=True, help="Only check that the key file is served, then stop."
)
@click.option(
    "--baseline",
    is_flag=True,
    help="Record the last build as submitted without sending anything (for URLs engines already know).",
)
@click.pass_context
def indexnow(
    ctx: click.Context,
    since_last: bool,
    urls_file: str | None,
    key: str | None,
    host: str | None,
    key_location: str | None,
    endpoint: str,
    state_path: str,
    batch_size: int,
    max_retries: int,
    max_wait: float,
    timeout: float,
    user_agent: str,
    dry_run: bool,
    as_json: bool,
    new_key: bool,
    out_dir: str | None,
    check_key_only: bool,
    baseline: bool,
) -> None:
    """Tell search engines which URLs were added, changed or removed, with IndexNow.

    Set up once: make a key and its file (--new-key --out DIR), publish the site so that
    https://HOST/KEY.txt serves it, and check it (--check-key). Then, after each build with
    `sitemapkit generate --state`, submit what changed (--since-last), or submit a list (--urls).
    The key file is checked before anything is sent. A run that stops (403, 422, a 429 that does
    not pass) records what was accepted: run it again to resume. sitemapkit never pings Google or
    Bing sitemap endpoints (both are retired); list sitemaps in robots.txt instead.

    Exit status: 0 on success (also when there is nothing to submit), 1 when the run stopped or an
    input could not be read, 2 for usage errors, 130 when interrupted.

    \b
    Examples:
      sitemapkit indexnow --new-key --out public/
      sitemapkit indexnow --check-key --key KEY --host www.example.com
      sitemapkit indexnow --since-last --key KEY --host www.example.com
      sitemapkit indexnow --urls changed.txt --key KEY --host www.example.com --dry-run
    """
    modes = [
        name
        for name, on in (
            ("--since-last", since_last),
            ("--urls", urls_file is not None),
            ("--new-key", new_key),
            ("--check-key", check_key_only),
            ("--baseline", baseline),
        )
        if on
    ]
    if out_dir is not None and not new_key:
        modes.append("--out")
    if baseline and since_last:
        modes.remove("--since-last")
    if len(modes) > 1:
        raise click.UsageError(f"{' and '.join(modes)} cannot be used together")
    if not modes:
        raise click.UsageError(
            "say what to do: --since-last or --urls FILE to submit, --new-key or --out DIR to set up a key, "
            "--check-key to check it, --baseline to start from the last build"
        )
    mode = modes[0]
    state_given = ctx.get_parameter_source("state_path") is not click.core.ParameterSource.DEFAULT
    if state_given and mode not in ("--since-last", "--baseline"):
        raise click.UsageError("--state is for --since-last and --baseline")
    if (
        new_key
        and key is not None
        and ctx.get_parameter_source("key") is click.core.ParameterSource.COMMANDLINE
    ):
        raise click.UsageError("--new-key makes a key: do not give --key")
    network = FetchOptions(
        user_agent=user_agent,
        connect_timeout=connect_timeout(timeout),
        read_timeout=timeout,
        retries=max_retries,
    )
    try:
        if mode == "--new-key":
            _new_key(out_dir, host, as_json)
        elif mode == "--out":
            _write_key(_need_key(key), out_dir or ".", host, as_json)
        elif mode == "--baseline":
            _baseline(state_path, as_json)
        elif mode == "--check-key":
            if host is None:
                raise click.UsageError("--check-key needs --host")
            options = replace(network, backoff_max=max_wait, retry_after_max=max_wait)
            url = verify_key(_need_key(key), host=host, key_location=key_location, options=options)
            if as_json:
                click.echo(json.dumps({"key_url": url, "ok": True}, indent=2))
            else:
                safe_echo(f"the key file {url} is served and holds the key")
        else:
            if host is None:
                raise click.UsageError(f"{mode} needs --host")
            _submit(
                since_last=since_last,
                urls_file=urls_file,
                key=_need_key(key),
                host=host,
                key_location=key_location,
                endpoint=endpoint,
                state_path=state_path,
                batch_size=batch_size,
                options=replace(
                    network,
                    backoff_base=min(2.0, max_wait),
                    backoff_max=max_wait,
                    retry_after_max=max_wait,
                ),
                dry_run=dry_run,
                as_json=as_json,
            )
    except UsageError as exc:
        if as_json:
            json_failure(None, str(exc))
        raise click.UsageError(for_terminal(str(exc))) from None
    except IndexNowError as exc:
        _stopped(exc, as_json, since_last)
        sys.exit(1)
    except (InputError, PublishError) as exc:
        fail(str(exc), json_fields={} if as_json else None)
    except (KeyboardInterrupt, Terminated) as exc:
        how, status = interruption(exc)
        resume = "; the requests accepted so far are recorded: run it again to resume" if since_last else ""
        fail(how + resume, status)


def _need_key(key: str | None) -> str:
    if key is None:
        raise click.UsageError(f"give the key with --key KEY (or ${KEY_ENV}); --new-key makes one")
    try:
        return check_key(key)
    except UsageError as exc:
        raise click.BadParameter(for_terminal(str(exc)), param_hint="--key") from None


def _key_url_hint(key: str, host: str | None) -> str:
    if host is None:
        return f"publish it at the root of your site (https://HOST/{key}.txt)"
    return f"publish it so that {Site.make(host, key).key_url} serves it"


def _new_key(out_dir: str | None, host: str | None, as_json: bool) -> None:
    key = generate_key()
    hint = _key_url_hint(key, host)
    path = write_key_file(out_dir, key) if out_dir is not None else None
    if as_json:
        click.echo(json.dumps({"key": key, "file": str(path) if path else None}, indent=2))
        return
    click.echo(key)
    if path is not None:
        safe_echo(f"wrote {path}: {hint}, then check it with --check-key", err=True)
    else:
        click.echo(f"write its file with --key {key} --out DIR (or --new-key --out DIR)", err=True)


def _write_key(key: str, out_dir: str, host: str | None, as_json: bool) -> None:
    hint = _key_url_hint(key, host)
    path = write_key_file(out_dir, key)
    if as_json:
        click.echo(json.dumps({"key": key, "file": str(path)}, indent=2))
    else:
        safe_echo(f"wrote {path}: {hint}")


def _baseline(state_path: str, as_json: bool) -> None:
    run = mark_submitted(state_path)
    if as_json:
        click.echo(json.dumps({"marked_run": run}, indent=2))
    elif run is None:
        click.echo("no build recorded in this state database yet: nothing to mark")
    else:
        click.echo(f"recorded run {run} as submitted: --since-last will send only what changes after it")


def _submit(
    *,
    since_last: bool,
    urls_file: str | None,
    key: str,
    host: str,
    key_location: str | None,
    endpoint: str,
    state_path: str,
    batch_size: int,
    options: FetchOptions,
    dry_run: bool,
    as_json: bool,
) -> None:
    printer = DiagnosticPrinter(limit=20, quiet=as_json)
    common: dict[str, Any] = {
        "host": host,
        "key": key,
        "key_location": key_location,
        "endpoint": endpoint,
        "batch_size": batch_size,
        "dry_run": dry_run,
        "options": options,
        "on_diagnostic": printer,
    }
    with progress("URLs submitted") as update:
        on_batch: Callable[[BatchResult], None] | None = None
        if update is not None and not dry_run:
            total = {"n": 0}

            def on_batch(batch: BatchResult) -> None:
                total["n"] += batch.size
                update(total["n"])

        try:
            if since_last:
                result = submit_changes(state_path, on_batch=on_batch, **common)
            else:
                assert urls_file is not None
                result = submit(read_url_file(urls_file, on_diagnostic=printer), on_batch=on_batch, **common)
        finally:
            printer.finish()
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    _summary(result, since_last, state_path)


def _body_shape(result: SubmitResult, size: int) -> str:
    shape: dict[str, Any] = {"host": result.host, "key": "..."}
    if result.key_location is not None:
        shape["keyLocation"] = result.key_location
    text = json.dumps(shape)[:-1]
    return f'{text}, "urlList": [{plural(size, "URL")}]}}'


def _summary(result: SubmitResult, since_last: bool, state_path: str) -> None:
    echo = safe_echo
    if since_last:
        if result.to_run is None:
            echo(f"no build recorded in {state_path} yet: nothing to submit")
            return
        if result.since_run == 0 and result.batches and not result.resumed:
            echo(
                "first submission from this state database: every URL counts as added "
                "(--baseline starts from the last build instead)"
            )
        if result.resumed:
            echo(f"resuming a stopped submission ({result.previously_submitted:,} URLs were accepted before)")
    if result.dry_run:
        echo(f"dry run: nothing sent, nothing recorded; POST {result.endpoint}")
        for batch in result.batches:
            more = ", ..." if batch.size > len(batch.first_urls) else ""
            echo(f"  request {batch.number}: {_body_shape(result, batch.size)}")
            echo(f"    {', '.join(batch.first_urls)}{more}")
    verb = "would submit" if result.dry_run else "submitted"
    line = f"{verb} {plural(result.submitted, 'URL')} in {plural(result.requests, 'request')}"
    if since_last:
        line += f" ({result.added:,} added, {result.changed:,} changed, {result.removed:,} removed"
        first = (result.since_run or 0) + 1
        line += f"; run {first})" if first == result.to_run else f"; runs {first} to {result.to_run})"
    if not result.dry_run:
        line += f" to {result.endpoint} for {result.host}"
    if result.skipped:
        line += f"; {plural(result.skipped, 'URL')} skipped (see above)"
    if result.duplicates:
        line += f"; {result.duplicates:,} repeated"
    if not result.batches:
        line = "nothing to submit" + (
            f": no change since run {result.since_run}" if since_last and result.since_run else ""
        )
        if result.skipped:
            line += f" ({plural(result.skipped, 'URL')} skipped, see above)"
    echo(line)
    if any(b.status == 202 for b in result.batches):
        echo("the endpoint answered 202 Accepted: it has not validated the key yet (usual for a new key)")


def _stopped(exc: IndexNowError, as_json: bool, since_last: bool) -> None:
    result = exc.result
    error_line(str(exc))
    if result is not None and not result.dry_run and (result.submitted or exc.resumable):
        if since_last and exc.resumable:
            click.echo(
                f"{plural(result.submitted, 'URL')} accepted and recorded before the stop; "
                "run the same command again to resume",
                err=True,
            )
        elif result.submitted:
            safe_echo(
                f"{plural(result.submitted, 'URL')} accepted before the stop, up to {result.last_url}; "
                "submit the rest again",
                err=True,
            )
    if as_json:
        if result is not None:
            click.echo(json.dumps({**result.to_dict(), "ok": False, "error": str(exc)}, indent=2))
        else:
            json_failure(None, str(exc))
