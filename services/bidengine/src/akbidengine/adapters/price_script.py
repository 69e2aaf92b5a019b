"""Bid prices from an operator's script: Akash's ``shellScript`` strategy, same contract.

Operators price in a script because it can know things the daemon does not (exchange
rates, per-tenant deals, allow lists). Go's ``bidengine/shellscript.go`` defines the contract
this adapter keeps byte for byte, so existing scripts (e.g. Akash's helm
``price_script_generic.sh``) work unchanged:

* stdin: one JSON object and a newline, built by :func:`~akbidengine.domain.pricing.script_stdin`;
* environment: the daemon's (or ``env``) plus ``AKASH_OWNER`` (the tenant) and
  ``AKASH_DENOM`` (the order's price denomination);
* stdout, whitespace trimmed: a positive decimal with at most 18 places, the bid per block.

Anything else means no bid, as a :class:`PricingError`: ``script_failed`` (cannot start,
or non-zero exit; carries the start of stderr), ``script_timeout`` (the script and every
process in its process group are killed), ``script_output`` (empty, unparsable, zero or
negative output, quoted). A semaphore bounds how many scripts run at once (Go's
``--bid-price-script-process-limit``); the timeout starts once a slot is taken, as in Go.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Mapping
from pathlib import Path

from akbidengine.domain.pricing import PriceRequest, PricingError, script_stdin
from aktypes.coin import Dec, DecCoin

DEFAULT_PROCESS_LIMIT = 32
DEFAULT_TIMEOUT = 10.0
_REAP_TIMEOUT = 5.0
_STDERR_LIMIT = 1000
_STDOUT_LIMIT = 200
_OUTPUT_RE = re.compile(r"^[+-]?[0-9]+(?:\.([0-9]+))?$")


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def parse_script_output(stdout: bytes) -> Dec:
    """The bid a script printed: what Go's ``LegacyNewDecFromStr`` accepts, above zero."""
    text = stdout.decode(errors="replace").strip()
    shown = repr(_clip(text, _STDOUT_LIMIT))
    if not text:
        raise PricingError("script_output", "the price script printed nothing")
    match = _OUTPUT_RE.match(text)
    if not match:
        raise PricingError("script_output", f"the price script printed {shown}, not a number")
    if len(match.group(1) or "") > 18:
        raise PricingError(
            "script_output", f"the price script printed {shown}: more than 18 decimal places"
        )
    try:
        amount = Dec(text)
    except ValueError as exc:
        raise PricingError("script_output", f"the price script printed {shown}: {exc}") from exc
    if not amount.is_positive():
        raise PricingError(
            "script_output", f"the price script printed {shown}; a bid must be above zero"
        )
    return amount


def _kill_group(process: asyncio.subprocess.Process) -> None:
    """Kill the script and whatever it started (it leads its own process group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _reap(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), _REAP_TIMEOUT)


class ShellScriptStrategy:
    """Run ``path`` once per order to price it (Go's ``shellScript`` strategy)."""

    def __init__(
        self,
        path: Path,
        *,
        process_limit: int = DEFAULT_PROCESS_LIMIT,
        timeout: float = DEFAULT_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if not str(path):
            raise ValueError("the price script path cannot be empty")
        if process_limit < 1:
            raise ValueError("the price script process limit must be at least 1")
        if timeout <= 0:
            raise ValueError("the price script timeout must be greater than zero")
        self.path = path
        self.timeout = timeout
        self._env = dict(env) if env is not None else None
        self._slots = asyncio.Semaphore(process_limit)

    async def price(self, request: PriceRequest) -> DecCoin:
        stdin = script_stdin(request)
        denom = request.max_price().denom
        env = dict(os.environ if self._env is None else self._env)
        env["AKASH_OWNER"] = request.owner
        env["AKASH_DENOM"] = denom
        async with self._slots:
            stdout, stderr, code = await self._run(stdin, env)
        if code != 0:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            detail = _clip(stderr.decode(errors="replace").strip(), _STDERR_LIMIT)
            raise PricingError(
                "script_failed", f"price script {self.path} {how}: {detail or '(no stderr)'}"
            )
        return DecCoin(denom=denom, amount=parse_script_output(stdout))

    async def _run(self, stdin: bytes, env: dict[str, str]) -> tuple[bytes, bytes, int]:
        try:
            process = await asyncio.create_subprocess_exec(
                self.path,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise PricingError(
                "script_failed", f"cannot run price script {self.path}: {exc.strerror or exc}"
            ) from exc
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(stdin), self.timeout)
        except TimeoutError:
            _kill_group(process)
            await _reap(process)
            raise PricingError(
                "script_timeout",
                f"price script {self.path} ran longer than {self.timeout:g}s and was killed",
            ) from None
        except BaseException:  # cancelled: leave no process behind
            _kill_group(process)
            await _reap(process)
            raise
        code = process.returncode if process.returncode is not None else await process.wait()
        return stdout, stderr, code
