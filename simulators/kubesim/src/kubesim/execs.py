"""Pod exec: `pods/{name}/exec` over a websocket, the command run in a sandbox.

The request is the kubelet's: repeated `command` (the argv), `container`, `stdin`, `stdout`,
`stderr` and `tty`, upgraded to a websocket speaking `v5.channel.k8s.io`, `v4.channel.k8s.io`
or `channel.k8s.io` (v1). Every frame is binary with a channel for its first byte: 0 stdin,
1 stdout, 2 stderr, 3 the closing status, 4 a terminal resize (`{"Width":w,"Height":h}`), and
on v5 255 to close a stream (the client's stdin: `[255, 0]`).

The argv runs in the exec sandbox (kubesim.sandbox: bubblewrap over a busybox root, no host
file, no network, the container's plain `env` values only, rlimits) in a process group of
its own: on a pty when `tty` (stdout and stderr merged on channel 1, resizes applied to
it), on pipes otherwise. Its exit is reported on channel 3 as the kubelet does (`Success`,
`NonZeroExitCode` with the code, an `InternalError` when it cannot start — or when no
sandbox can be made on this machine: then nothing runs) and the websocket is closed. The
sandbox is killed when the command exits, when the client goes away, when the server
stops, or after `timeout` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import secrets
import signal
import struct
import termios
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from aiohttp import WSMsgType, web
from aiohttp.abc import AbstractAccessLogger

from kubesim import errors, inputs, quantity
from kubesim.sandbox import Sandbox, as_user

log = logging.getLogger("kubesim")

V5, V4, V1 = "v5.channel.k8s.io", "v4.channel.k8s.io", "channel.k8s.io"
PROTOCOLS = (V5, V4, V1)  # in order of preference
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
CHUNK = 32 * 1024
DRAIN = 5.0  # how long the output may take to arrive once the command has exited


@dataclass(frozen=True)
class ExecOptions:
    command: list[str]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool

    @classmethod
    def of(cls, request: web.Request) -> ExecOptions:
        """PodExecOptions from the query, checked as the real server checks them."""
        q = request.query
        command = q.getall("command", [])
        if not command:
            raise errors.bad_request("you must specify at least one command for the container")
        tty = inputs.flag(q, "tty")
        stdin, stdout, stderr = (inputs.flag(q, n) for n in ("stdin", "stdout", "stderr"))
        if not (stdin or stdout or stderr):
            raise errors.bad_request("you must specify at least 1 of stdin, stdout, stderr")
        # the kubelet drops stderr on a tty: the terminal carries both
        return cls(list(command), stdin, stdout, stderr and not tty, tty)


class ExecRunner:
    def __init__(self, timeout: float = 3600.0, sandbox: Sandbox | None = None) -> None:
        self.timeout = timeout
        self.sandbox = sandbox or Sandbox()
        self._running: dict[_Session, asyncio.Task[Any]] = {}

    def prepare(self) -> None:
        """Make the sandbox (off the event loop's hot path: once, at start)."""
        self.sandbox.prepare()

    async def close(self) -> None:
        """Kill every command still running and let its exec end: the server is stopping."""
        for session in self._running:
            session.kill()
        if self._running:
            await asyncio.wait(self._running.values(), timeout=DRAIN)
        self.sandbox.close()

    async def respond(
        self,
        request: web.Request,
        pod: dict[str, Any],
        container: dict[str, Any],
        status: dict[str, Any] | None,
    ) -> web.StreamResponse:
        options = ExecOptions.of(request)
        _check_running(pod, container, status)
        ws = web.WebSocketResponse(protocols=PROTOCOLS)
        if not ws.can_prepare(request).ok:
            raise errors.bad_request(
                "Upgrade request required: exec streams over a websocket "
                f"(Sec-WebSocket-Protocol: {', '.join(PROTOCOLS)}); kubesim speaks no SPDY"
            )
        protocol = _negotiate(request.headers.get("Sec-WebSocket-Protocol"))
        ws = web.WebSocketResponse(protocols=(protocol,) if protocol else ())
        await ws.prepare(request)
        env = {e["name"]: e["value"] for e in container.get("env") or [] if "value" in e}
        session = _Session(
            ws, protocol or V1, options, env=env, sandbox=self.sandbox, pod=pod, container=container
        )
        task = asyncio.current_task()
        if task is not None:
            self._running[session] = task
        try:
            await session.run(self.timeout)
        finally:
            self._running.pop(session, None)
        return ws


class AccessLog(AbstractAccessLogger):
    """A line per request, as aiohttp's own; an exec's command reduced to its name."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info(
            '%s "%s %s" %d %.3fs',
            request.remote,
            request.method,
            _loggable(request),
            response.status,
            time,
        )


def _loggable(request: web.BaseRequest) -> str:
    if not request.path.endswith(("/exec", "/attach")):
        return request.path_qs
    commands = request.query.getall("command", [])
    kept = [(k, v) for k, v in request.query.items() if k != "command"]
    if commands:
        kept.insert(0, ("command", commands[0].rsplit("/", 1)[-1][:64]))
    return f"{request.path}?{urlencode(kept)}"


def _check_running(
    pod: dict[str, Any], container: dict[str, Any], status: dict[str, Any] | None
) -> None:
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        raise errors.bad_request(
            f"cannot exec into a container in a completed pod; current phase is {phase}"
        )
    state = (status or {}).get("state") or {}
    if not state.get("running"):
        reason = (state.get("waiting") or state.get("terminated") or {}).get("reason")
        raise errors.bad_request(
            f'container "{container["name"]}" in pod "{pod["metadata"]["name"]}" is not running'
            + (f": {reason}" if reason else "")
        )


def _negotiate(header: str | None) -> str:
    """The preferred protocol the client offers; "" (v1) when it offers none."""
    if header is None:
        return ""
    offered = [p.strip() for p in header.split(",") if p.strip()]
    for protocol in PROTOCOLS:
        if protocol in offered:
            return protocol
    raise errors.bad_request(
        f"requested protocol(s) are not supported: [{' '.join(offered)}]; "
        f"supports [{' '.join(PROTOCOLS)}]"
    )


class _Session:
    """One exec: the process, its output pumped to the client, the client's frames to it."""

    def __init__(
        self,
        ws: web.WebSocketResponse,
        protocol: str,
        options: ExecOptions,
        *,
        env: dict[str, str],
        sandbox: Sandbox,
        pod: dict[str, Any],
        container: dict[str, Any],
    ) -> None:
        self.ws = ws
        self.protocol = protocol
        self.options = options
        self.env = env
        self.sandbox = sandbox
        self.pod = pod
        self.container = container
        self.process: asyncio.subprocess.Process | None = None
        self.pty: int | None = None  # the pty's master side, with tty

    async def run(self, timeout: float) -> None:
        program = self.options.command[0]
        if self.sandbox.reason is not None:
            log.warning("exec %s refused: no sandbox (%s)", _name(program), self.sandbox.reason)
            await self._finish(_no_sandbox(self.sandbox.reason))
            return
        if not self.sandbox.found(program):
            await self._finish(_start_failure(program, FileNotFoundError()))
            return
        try:
            process = await self._start()
        except OSError as exc:
            log.warning("exec %s cannot start: %s", _name(program), exc.strerror or exc)
            await self._finish(_start_failure(program, exc))
            return
        first = STDOUT if self.options.stdout else STDERR if self.options.stderr else ERROR
        await self._send(first, b"")  # as the kubelet does: the streams are open
        pumps = [asyncio.create_task(self._pump(ch, src)) for ch, src in self._outputs()]
        inbox = asyncio.create_task(self._receive())
        exited = asyncio.create_task(process.wait())
        try:
            await asyncio.wait(
                {exited, inbox}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            self.kill()  # on time out or the client gone; else whatever it left behind
            code = await exited
            await asyncio.wait(pumps, timeout=DRAIN)
            await self._finish(_exit_status(self.options.command, code))
            await inbox
        finally:
            if process.returncode is None:  # cancelled: the server is going away
                self.kill()
            for task in (*pumps, inbox, exited):
                task.cancel()
            if process.stdin is not None:
                process.stdin.close()
            if self.pty is not None:  # closed once its reader has let go of it
                _close_after(self.pty, pumps)

    async def _start(self) -> asyncio.subprocess.Process:
        metadata = self.pod["metadata"]
        launch = self.sandbox.launch(
            self.options.command,
            self.env,
            hostname=metadata["name"],
            pod_uid=metadata.get("uid") or metadata["name"],
            memory=_memory(self.container),
            tty=self.options.tty,
        )
        pipe = asyncio.subprocess.PIPE
        common: dict[str, Any] = {
            "env": {},  # bwrap's pid 1 inside keeps this environment: an empty one
            "pass_fds": (launch.options_fd,),
            "start_new_session": True,
            **as_user(launch.uid),
        }
        try:
            if not self.options.tty:
                self.process = await asyncio.create_subprocess_exec(
                    *launch.argv,
                    stdin=pipe if self.options.stdin else asyncio.subprocess.DEVNULL,
                    stdout=pipe if self.options.stdout else asyncio.subprocess.DEVNULL,
                    stderr=pipe if self.options.stderr else asyncio.subprocess.DEVNULL,
                    **common,
                )
                return self.process
            master, slave = os.openpty()
            try:
                self.process = await asyncio.create_subprocess_exec(
                    *launch.argv, stdin=slave, stdout=slave, stderr=slave, **common
                )
            except OSError:
                os.close(master)
                raise
            finally:
                os.close(slave)  # the child's alone now, so its exit ends the output
        finally:
            os.close(launch.options_fd)
        os.set_blocking(master, False)
        self.pty = master
        return self.process

    def _outputs(self) -> list[tuple[int, AsyncIterator[bytes]]]:
        if self.pty is not None:
            return [(STDOUT, _read_fd(self.pty))] if self.options.stdout else []
        process = self.process
        if process is None:
            return []
        return [
            (channel, _read_stream(stream))
            for channel, stream in ((STDOUT, process.stdout), (STDERR, process.stderr))
            if stream is not None
        ]

    async def _pump(self, channel: int, source: AsyncIterator[bytes]) -> None:
        with contextlib.suppress(ConnectionError):
            async for chunk in source:
                await self._send(channel, chunk)

    async def _receive(self) -> None:
        """The client's frames until it closes: stdin, resizes and (v5) stdin's close."""
        async for message in self.ws:
            if message.type == WSMsgType.BINARY:
                data: bytes = message.data
            elif message.type == WSMsgType.TEXT:
                data = message.data.encode()  # the Python client writes str as text frames
            else:
                continue
            if not data:
                continue
            channel, payload = data[0], data[1:]
            if channel == STDIN and self.options.stdin:
                await self._write_stdin(payload)
            elif channel == RESIZE and self.pty is not None:
                with contextlib.suppress(ValueError, KeyError, TypeError, OSError):
                    size = json.loads(payload)
                    packed = struct.pack("HHHH", int(size["Height"]), int(size["Width"]), 0, 0)
                    fcntl.ioctl(self.pty, termios.TIOCSWINSZ, packed)
            elif channel == CLOSE and self.protocol == V5 and payload[:1] == bytes([STDIN]):
                self._close_stdin()
        self._close_stdin()

    async def _write_stdin(self, data: bytes) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            if self.pty is not None:
                os.write(self.pty, data)
            elif self.process is not None and self.process.stdin is not None:
                self.process.stdin.write(data)
                await self.process.stdin.drain()

    def _close_stdin(self) -> None:
        # a terminal has no end of input to give: the kubelet leaves a tty open too
        if self.process is not None and self.process.stdin is not None:
            self.process.stdin.close()

    def kill(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)

    async def _send(self, channel: int, data: bytes) -> None:
        if not self.ws.closed:
            await self.ws.send_bytes(bytes([channel]) + data)

    async def _finish(self, status: dict[str, Any]) -> None:
        """The closing status on channel 3 (v1: a failure's message as text), then close."""
        with contextlib.suppress(ConnectionError):
            if self.protocol != V1:
                await self._send(ERROR, json.dumps(status, separators=(",", ":")).encode())
            elif status["status"] != "Success":
                await self._send(ERROR, status["message"].encode())
        await self.ws.close()


async def _read_stream(stream: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while chunk := await stream.read(CHUNK):
        yield chunk


async def _read_fd(fd: int) -> AsyncIterator[bytes]:
    """A pty's output until its other side is closed (EIO)."""
    loop = asyncio.get_running_loop()
    while True:
        ready = loop.create_future()
        loop.add_reader(fd, _wake, ready)
        try:
            await ready
        finally:
            loop.remove_reader(fd)
        try:
            chunk = os.read(fd, CHUNK)
        except BlockingIOError:
            continue
        except OSError:
            return
        if not chunk:
            return
        yield chunk


def _close_after(fd: int, tasks: list[asyncio.Task[None]]) -> None:
    pending = [t for t in tasks if not t.done()]
    if not pending:
        os.close(fd)
        return
    gathered = asyncio.gather(*pending, return_exceptions=True)
    gathered.add_done_callback(lambda _: os.close(fd))


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


def _name(program: str) -> str:
    """A command's name for a log line: never its arguments, nor a path's folders."""
    return repr(program.rsplit("/", 1)[-1][:64])


def _memory(container: dict[str, Any]) -> int | None:
    """The container's memory limit (else its request) in bytes, if it sets one."""
    resources = container.get("resources") or {}
    for kind in ("limits", "requests"):
        value = (resources.get(kind) or {}).get("memory")
        if value is not None:
            try:
                return int(quantity.parse(value))
            except (ValueError, ArithmeticError):
                return None
    return None


def _no_sandbox(reason: str) -> dict[str, Any]:
    message = (
        "Internal error occurred: exec is refused: this cluster has no sandbox to run "
        f"commands in ({reason}); kubesim never runs them on its host"
    )
    return {
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def _exit_status(command: list[str], code: int) -> dict[str, Any]:
    if code < 0:
        code = 128 - code  # killed by a signal: a shell's code for it
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: error executing command "
        f"[{' '.join(command)}], exit code {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def _start_failure(program: str, exc: OSError) -> dict[str, Any]:
    """The InternalError a containerd kubelet answers for a command that cannot start."""
    if isinstance(exc, FileNotFoundError):
        why = (
            f"stat {program}: no such file or directory"
            if "/" in program
            else "executable file not found in $PATH"
        )
    else:
        why = (exc.strerror or str(exc)).lower()
    cause = (
        "error executing command in container: failed to exec in container: failed to start "
        f'exec "{secrets.token_hex(32)}": OCI runtime exec failed: exec failed: unable to start '
        f'container process: exec: "{program}": {why}: unknown'
    )
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {cause}",
        "reason": "InternalError",
        "details": {"causes": [{"message": cause}]},
        "code": 500,
    }
