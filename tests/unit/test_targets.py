import random

import pytest

from chaosdb.core.errors import ChaosDBError, UnsafeFault
from chaosdb.core.podnames import pod_map
from chaosdb.core.targets import Target, check_quorum, parse_count, select_targets, tolerated_failures


def cluster(down=()):
    return [
        Target("node1", {"replica", "etcd-leader"}, up="node1" not in down),
        Target("node2", {"leader", "etcd-follower"}, up="node2" not in down),
        Target("node3", {"replica", "etcd-follower"}, up="node3" not in down),
    ]


@pytest.mark.parametrize("selector,expected", [
    ("leader", ["node2"]),
    ("primary", ["node2"]),
    ("etcd-leader", ["node1"]),
    ("replica", ["node1"]),
    ("follower", ["node1"]),
    ("any", ["node1"]),
    ("node3", ["node3"]),
])
def test_select_by_role_or_name(selector, expected):
    assert [t.name for t in select_targets(cluster(), selector)] == expected


def test_count_and_all():
    assert [t.name for t in select_targets(cluster(), "replica", 2)] == ["node1", "node3"]
    assert [t.name for t in select_targets(cluster(), "etcd-follower", "all")] == ["node2", "node3"]
    assert len(select_targets(cluster(), "any", "all")) == 3


def test_random_uses_the_rng_and_respects_count():
    picks = {select_targets(cluster(), "random", 1, rng=random.Random(seed))[0].name for seed in range(30)}
    assert picks == {"node1", "node2", "node3"}


def test_explicit_names_list_and_comma_string():
    assert [t.name for t in select_targets(cluster(), ["node3", "node1"], "all")] == ["node3", "node1"]
    assert [t.name for t in select_targets(cluster(), "node3,node1", "all")] == ["node3", "node1"]


def test_errors_are_explicit():
    with pytest.raises(ChaosDBError, match="unknown target node9"):
        select_targets(cluster(), "node9")
    with pytest.raises(ChaosDBError, match="only 1 have it"):
        select_targets(cluster(), "leader", 2)
    nodes = [Target("a", {"replica"}), Target("b", {"replica"})]
    with pytest.raises(ChaosDBError, match="no node has the role 'leader'"):
        select_targets(nodes, "leader")
    for bad in (0, -1, "x", True):
        with pytest.raises(ChaosDBError, match="count must be"):
            parse_count(bad)


@pytest.mark.parametrize("members,tolerated", [(1, 0), (2, 0), (3, 1), (4, 1), (5, 2), (7, 3)])
def test_majority_quorum_tolerance(members, tolerated):
    assert tolerated_failures(members) == tolerated


def test_quorum_rule_counts_nodes_already_down():
    nodes = cluster()
    verdict = check_quorum(nodes, [nodes[1]])
    assert verdict["allowed_by_quorum_rule"] and verdict["down_after_fault"] == ["node2"]
    nodes = cluster(down=("node1",))
    with pytest.raises(UnsafeFault, match="2 of 3 members would be down"):
        check_quorum(nodes, [nodes[1]])
    # the same target that is already down does not count twice
    assert check_quorum(nodes, [nodes[0]])["allowed_by_quorum_rule"]


def test_quorum_rule_can_be_overridden_and_says_so():
    nodes = cluster()
    verdict = check_quorum(nodes, nodes[:2], allow_quorum_loss=True)
    assert verdict["allowed_by_quorum_rule"] is False
    with pytest.raises(UnsafeFault, match="allow_quorum_loss"):
        check_quorum(nodes, nodes[:2])


@pytest.mark.parametrize("given,expected", [
    ({"n1": "postgres-0", 2: "basic-tikv-1"}, {"n1": "postgres-0", "2": "basic-tikv-1"}),
    ('{"n1": "postgres-0", "n2": "postgres-1"}', {"n1": "postgres-0", "n2": "postgres-1"}),
    ("n1=postgres-0, n2=postgres-1", {"n1": "postgres-0", "n2": "postgres-1"}),
    ("", {}), (None, {}),
])
def test_a_pod_map_comes_as_a_mapping_or_as_text_from_the_environment(given, expected):
    assert pod_map({"patroni_pods": given}, "patroni_pods") == expected


@pytest.mark.parametrize("bad", ["n1", "n1=,n2=postgres-1", '{"n1": ', "[1, 2]", 7])
def test_a_pod_map_that_is_not_one_is_refused_with_the_forms_it_takes(bad):
    with pytest.raises(ChaosDBError, match="patroni_pods: .*n1=postgres-0"):
        pod_map({"patroni_pods": bad}, "patroni_pods")
