"""console.service.browser_processes against the sandbox (notes §5)."""

import asyncio

import pytest

from console.service import Conflict, Forbidden, Invalid, NotFound, browser_processes, browsers


@pytest.fixture
async def session(service):
    return (await browsers.create_session(service, timeout_seconds=3600)).session_id


async def test_it_execs_and_decodes_the_output(service, session):
    result = await browser_processes.exec_command(
        service, session, "sh", ["-c", "printf 'é\\n'; echo oops >&2; exit 2"]
    )
    assert result.exit_code == 2
    assert result.stdout.decode() == "é\n" and result.stderr == b"oops\n"
    assert result.duration_ms is not None


async def test_it_spawns_streams_and_reads_the_exit_status(service, session):
    spawned = await browser_processes.spawn(service, session, "sh", ["-c", "echo hi; echo err >&2; exit 5"])
    assert spawned.process_id and spawned.pid and spawned.started_at.tzinfo is not None
    frames = [frame async for frame in browser_processes.stream(service, session, spawned.process_id)]
    out = b"".join(f.data for f in frames if f.stream == "stdout")
    err = b"".join(f.data for f in frames if f.stream == "stderr")
    assert (out, err) == (b"hi\n", b"err\n")
    assert frames[-1].is_exit and frames[-1].exit_code == 5
    status = await browser_processes.status(service, session, spawned.process_id)
    assert status.state == "exited" and not status.running and status.exit_code == 5


async def test_it_writes_stdin_and_kills(service, session):
    spawned = await browser_processes.spawn(service, session, "cat")
    stream = browser_processes.stream(service, session, spawned.process_id)
    assert await browser_processes.write_stdin(service, session, spawned.process_id, b"hello\n") == 6
    echoed = await asyncio.wait_for(anext(stream), timeout=10)
    assert (echoed.stream, echoed.data) == ("stdout", b"hello\n")
    status = await browser_processes.status(service, session, spawned.process_id)
    assert status.running and status.mem_bytes > 0
    await browser_processes.kill(service, session, spawned.process_id, "INT")
    rest = [frame async for frame in stream]
    assert rest[-1].is_exit and rest[-1].exit_code == 130
    with pytest.raises(Conflict):
        await browser_processes.kill(service, session, spawned.process_id, "KILL")


async def test_it_resizes_a_tty(service, session):
    # The shell reports the terminal's size once a line arrives, after the resize.
    spawned = await browser_processes.spawn(
        service, session, "sh", ["-c", "read line; stty size"], allocate_tty=True, cols=80, rows=24
    )
    stream = browser_processes.stream(service, session, spawned.process_id)
    await browser_processes.resize(service, session, spawned.process_id, cols=100, rows=30)
    await browser_processes.write_stdin(service, session, spawned.process_id, b"go\n")
    frames = [frame async for frame in stream]
    out = b"".join(f.data for f in frames if f.stream == "stdout")
    assert b"30 100" in out
    assert frames[-1].is_exit and frames[-1].exit_code == 0


async def test_it_maps_the_services_refusals(service, tenant, session):
    with pytest.raises(Invalid) as refused:
        await browser_processes.exec_command(service, session, "no-such-program-xyz")
    assert "command" in refused.value.field_errors
    with pytest.raises(NotFound):
        await browser_processes.status(service, session, "00000000-0000-0000-0000-000000000000")
    tenant.control("POST", "settings", {"exec_enabled": False})
    with pytest.raises(Forbidden) as disabled:
        await browser_processes.spawn(service, session, "true")
    assert disabled.value.code == "exec_disabled"
