"""chaosd's refusals as the pack reads them (texts as chaosd bc039aa and the Chaos Mesh controller answer them;
the first one recorded from a CI run where a process exited while chaosd listed the machine's processes)."""

from chaosdb.core.chaosd import ended_process, transient_refusal

RACE = ('http://127.0.0.1:34775: {"error":true,"message":"error.api.internal_server_error: open /proc/25868/status: '
        'no such file or directory","code":"error.api.internal_server_error"}: HTTP status is not OK')
NOT_FOUND = ('http://127.0.0.1:34775: {"error":true,"message":"error.api.internal_server_error: process 574 not '
             'found","code":"error.api.internal_server_error"}: HTTP status is not OK')


def test_a_process_exiting_during_the_listing_is_worth_asking_again():
    assert transient_refusal(RACE)
    assert not transient_refusal(NOT_FOUND)


def test_a_pid_no_process_has_is_named():
    assert ended_process(NOT_FOUND) == "574"
    assert ended_process(RACE) is None
