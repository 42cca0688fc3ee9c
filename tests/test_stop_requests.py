"""`io.stop_requests`: Ctrl-C and SIGTERM noted for a loop to stop at its next safe point, a
second Ctrl-C raised at once, a request the loop did not act on delivered again afterwards."""

import os
import signal
import threading

import pytest

from amer_lib.io import stop_requests


@pytest.fixture
def received():
    """The signals the handlers before `stop_requests` got, in order (and those handlers given back)."""
    got = []
    previous = {
        s: signal.signal(s, lambda signum, frame: got.append(signal.Signals(signum).name))
        for s in (signal.SIGINT, signal.SIGTERM)
    }
    yield got
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def test_the_first_signal_is_noted_and_a_loop_that_acts_on_it_ends_it(received):
    with pytest.raises(KeyboardInterrupt), stop_requests() as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop and stop.signal == "SIGTERM"
        os.kill(os.getpid(), signal.SIGTERM)  # a second SIGTERM: still one request
        raise KeyboardInterrupt  # the loop stopped, as asked
    assert received == []


def test_a_second_ctrl_c_is_raised_at_once(received):
    reached = []
    with pytest.raises(KeyboardInterrupt), stop_requests() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.signal == "SIGINT"
        os.kill(os.getpid(), signal.SIGINT)
        reached.append(1)
    assert reached == [] and received == []


@pytest.mark.parametrize("ends", ["normally", "failing"])
def test_a_request_the_loop_did_not_act_on_is_delivered_again(received, ends):
    def loop():
        with stop_requests():
            os.kill(os.getpid(), signal.SIGTERM)
            if ends == "failing":
                raise OSError(28, "No space left on device")

    if ends == "failing":
        with pytest.raises(OSError, match="No space left"):
            loop()
    else:
        loop()
    assert received == ["SIGTERM"]
    os.kill(os.getpid(), signal.SIGINT)  # the handlers before are back
    assert received == ["SIGTERM", "SIGINT"]


def test_off_the_main_thread_signals_are_left_alone():
    seen = []

    def worker():
        with stop_requests() as stop:
            seen.append((bool(stop), signal.getsignal(signal.SIGTERM)))

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [(False, before)]
