"""The executor's shell: the agent's stream and the task processes in, the book's commands out.

One asyncio loop.  SUBSCRIBE is a long POST whose answer is the RecordIO stream of events; each
UPDATE is a POST of its own, sent one at a time in the order the book made them.  Everything that
happens becomes an event for plastic.core.executor.book.ExecutorBook, and whatever it answers is
carried out here as it is.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import time
from collections import deque
from pathlib import Path
from typing import Any

import aiohttp

from plastic.core.executor.book import ExecutorBook
from plastic.core.executor.messages import (
    ConnectionLost,
    ExecutorCommand,
    ExecutorEvent,
    Exit,
    ProcessExited,
    ProcessFailedToStart,
    ProcessStarted,
    Resubscribe,
    SendUpdate,
    ShutdownReceived,
    SignalProcessGroup,
    StartProcess,
    Ticked,
    UpdateAccepted,
    Usage,
)
from plastic.executor import protocol as proto
from plastic.executor.processes import TaskProcesses
from plastic.mesos.recordio import Decoder, RecordIOError

log = logging.getLogger(__name__)

ENDPOINT_PATH = "/api/v1/executor"
TRANSCRIPT_ENV = "PLASTIC_EXECUTOR_TRANSCRIPT"  # a file: every call, answer and event, one JSON line each
SIGNALS = {"TERM": signal.SIGTERM, "KILL": signal.SIGKILL}
UPDATES_IN_FLIGHT = 16  # UPDATE calls waiting for the agent at once (different tasks')


class ExecutorShell:
    def __init__(self, env: proto.ExecutorEnvironment, base_env: dict[str, str]):
        self.env = env
        self.url = f"http://{env.agent_endpoint}{ENDPOINT_PATH}"
        self.book = ExecutorBook(env.settings, os.urandom(8), now=time.time())
        self.task_infos: dict[str, dict[str, Any]] = {}
        self.processes = TaskProcesses(Path(env.directory), base_env, self._process_exited)
        self._events: deque[ExecutorEvent] = deque()
        self._handling = False
        self._timer: asyncio.TimerHandle | None = None
        self._exit: asyncio.Future[Exit] | None = None
        self._stream: asyncio.Task | None = None
        self._updates: asyncio.Queue[tuple[int, SendUpdate]] = asyncio.Queue()
        self._generation = 0  # of the subscription; updates queued under an older one are dropped
        self._client: aiohttp.ClientSession | None = None
        self._transcript = base_env.get(TRANSCRIPT_ENV) or None

    def _note(self, direction: str, doc: Any) -> None:
        """One line of the transcript (tests/local/data/executor-1.11 was recorded this way)."""
        if self._transcript:
            with open(self._transcript, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"t": time.time(), "dir": direction, "doc": doc}) + "\n")

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        self._exit = loop.create_future()
        # aiohttp: a third of httpx's CPU per call here, and the executor makes two calls a task
        self._client = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, connect=10.0),
                                             connector=aiohttp.TCPConnector(limit=UPDATES_IN_FLIGHT + 2), trust_env=False)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda: self.feed(ShutdownReceived(time.time())))
        sender = loop.create_task(self._send_updates())
        self._carry_out(self.book.start())
        try:
            done = await self._exit
        finally:
            sender.cancel()
            if self._stream is not None:
                self._stream.cancel()
            await self._client.close()
            self.processes.close()
        log.info("executor %s leaves: %s", self.env.executor_id, done.reason)
        return done.code

    # ------------------------------------------------------------ events in

    def feed(self, event: ExecutorEvent) -> None:
        self._events.append(event)
        if self._handling:
            return
        self._handling = True
        try:
            while self._events:
                self._carry_out(self.book.handle(self._events.popleft()))
        finally:
            self._handling = False
        self._rearm()

    def _rearm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadline = self.book.next_deadline()
        if deadline is not None:
            delay = max(0.0, deadline - time.time()) + 0.001
            self._timer = asyncio.get_running_loop().call_later(delay, lambda: self.feed(Ticked(time.time())))

    def _process_exited(self, task_id: str, returncode: int, usage: Usage, tail: str) -> None:
        self.feed(ProcessExited(task_id, returncode, time.time(), usage=usage, stderr_tail=tail))

    # ------------------------------------------------------------ commands out

    def _carry_out(self, commands: list[ExecutorCommand]) -> None:
        for command in commands:
            match command:
                case StartProcess():
                    self._start(command.task_id)
                case SignalProcessGroup():
                    self.processes.signal(command.task_id, SIGNALS[command.signal])
                case SendUpdate():
                    self._updates.put_nowait((self._generation, command))
                case Resubscribe():
                    self._generation += 1
                    self._stream = asyncio.get_running_loop().create_task(self._subscribe(command, self._generation))
                case Exit():
                    if self._exit is not None and not self._exit.done():
                        self._exit.set_result(command)

    def _start(self, task_id: str) -> None:
        info = self.task_infos.get(task_id, {})
        now = time.time()
        try:
            self.processes.start(task_id, proto.command_of(info))
        except (OSError, ValueError) as exc:
            self._events.append(ProcessFailedToStart(task_id, str(exc), now))
            return
        self._events.append(ProcessStarted(task_id, now))

    # ------------------------------------------------------------ the agent

    async def _subscribe(self, command: Resubscribe, generation: int) -> None:
        assert self._client is not None
        tasks = [self.task_infos[t] for t in command.unacknowledged_tasks if t in self.task_infos]
        body = proto.subscribe_call(tasks, list(command.unacknowledged_updates), self.env)
        self._note("call", body)
        try:
            async with self._client.post(self.url, json=body, headers={"Accept": "application/json"}) as response:
                self._note("answer", {"status": response.status,
                                      "content_type": response.headers.get("content-type")})
                if response.status != 200:
                    text = (await response.text(errors="replace")).strip()
                    log.warning("SUBSCRIBE answered %d: %s", response.status, text[:300])
                else:
                    await self._read_events(response)
        except (aiohttp.ClientError, RecordIOError, OSError, asyncio.TimeoutError) as exc:
            log.info("the agent's stream ended: %s", exc)
        if generation == self._generation:
            self.feed(ConnectionLost(time.time()))

    async def _read_events(self, response: aiohttp.ClientResponse) -> None:
        decoder = Decoder()
        async for chunk in response.content.iter_any():
            for record in decoder.feed(chunk):
                event = json.loads(record)
                self._note("event", event)
                ev, task = proto.event_of(event, time.time())
                if task is not None and ev is not None:
                    self.task_infos[ev.task_id] = task  # type: ignore[union-attr]
                if ev is not None:
                    self.feed(ev)
                elif event.get("type") == "ERROR":
                    log.error("the agent says: %s", (event.get("error") or {}).get("message"))

    async def _send_updates(self) -> None:
        """Deliver the book's updates: a task's in order (its next one only after the agent took the
        last), different tasks' side by side, up to UPDATES_IN_FLIGHT at once.  One at a time, each
        waited a round trip through the busy agent's queue: a few dozen a second for the whole agent."""
        pending: dict[str, deque[tuple[int, SendUpdate]]] = {}
        slots = asyncio.Semaphore(UPDATES_IN_FLIGHT)
        senders: set[asyncio.Task] = set()
        try:
            while True:
                generation, update = await self._updates.get()
                queue = pending.get(update.task_id)
                if queue is not None:  # its sender is still at an earlier update of the task
                    queue.append((generation, update))
                    continue
                pending[update.task_id] = deque([(generation, update)])
                sender = asyncio.get_running_loop().create_task(self._send_task_updates(update.task_id, pending, slots))
                senders.add(sender)
                sender.add_done_callback(senders.discard)
        finally:
            for sender in senders:
                sender.cancel()

    async def _send_task_updates(self, task_id: str, pending: dict[str, deque[tuple[int, SendUpdate]]],
                                 slots: asyncio.Semaphore) -> None:
        queue = pending[task_id]
        try:
            while queue:
                generation, update = queue[0]
                async with slots:
                    await self._deliver(generation, update)
                queue.popleft()
        finally:
            del pending[task_id]

    async def _deliver(self, generation: int, update: SendUpdate) -> None:
        assert self._client is not None
        delay = 0.05
        while generation == self._generation:
            try:
                call = proto.update_call(update, self.env)
                self._note("call", call)
                async with self._client.post(self.url, json=call) as res:
                    status, text = res.status, await res.text(errors="replace")
                self._note("answer", {"status": status, "body": text})
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                log.info("UPDATE of %s not delivered (%s); again in %.2f s", update.task_id, exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            if status == 202:
                self.feed(UpdateAccepted(update.uuid, time.time()))
            else:
                log.error("UPDATE %s of %s refused (%d): %s", update.state, update.task_id, status, text.strip()[:300])
            return

def main(idle_s: float, kill_grace_s: float) -> int:
    env = proto.environment_of(os.environ, idle_s=idle_s, kill_grace_s=kill_grace_s)
    return asyncio.run(ExecutorShell(env, dict(os.environ)).run())
