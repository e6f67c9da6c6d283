"""The RL trainer's parts: advantages, the clipped objective, curriculum, rewards, config."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from training.curriculum import CurriculumSampler
from training.rewards import check_means, overlong_penalty, reward_functions
from training.rl import _union, step_seed
from training.rl_config import RLConfig
from training.rl_loss import LossSettings, all_equal, group_advantages, policy_loss
from validators.report import Check, Report


def test_advantages_centre_the_group_and_scale_by_std_unless_dr_grpo():
    rewards = [1.0, 0.0, 0.5, 0.5]
    centred = group_advantages(rewards, scale=False)
    assert centred == [0.5, -0.5, 0.0, 0.0]
    scaled = group_advantages(rewards, scale=True)
    std = math.sqrt(0.5 / 3)
    assert scaled == pytest.approx([0.5 / std, -0.5 / std, 0.0, 0.0], rel=1e-3)
    assert all_equal([0.3, 0.3, 0.3]) and not all_equal([0.3, 0.3, 0.31])


def _settings(kind: str, beta: float = 0.0) -> LossSettings:
    return LossSettings(kind, 0.2, 0.28, beta, max_new_tokens=10)


def test_clip_higher_bounds_the_ratio_per_sign_of_the_advantage():
    # One token per row: ratios 2.0 (advantage +1) and 0.5 (advantage -1) are both clipped.
    logps = torch.log(torch.tensor([[2.0], [0.5]])).requires_grad_()
    old = torch.zeros(2, 1)
    mask = torch.ones(2, 1)
    adv = torch.tensor([1.0, -1.0])
    loss, stats = policy_loss(logps, old, None, adv, mask, _settings("dapo"), 2, 2)
    # clipped terms: -min(2*1, 1.28*1) = -1.28 ; -min(0.5*-1, 0.8*-1) = 0.8
    assert float(loss.detach()) == pytest.approx((-1.28 + 0.8) / 2)
    assert stats["clip_tokens"] == 2
    loss.backward()
    assert torch.all(logps.grad == 0)  # clipped tokens pass no gradient


def test_aggregations_differ_as_the_loss_types_say():
    logps = torch.zeros(2, 4, requires_grad=True)
    old = torch.zeros(2, 4)
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    adv = torch.tensor([1.0, 1.0])
    grpo, _ = policy_loss(logps, old, None, adv, mask, _settings("grpo"), 2, 5)
    dapo, _ = policy_loss(logps, old, None, adv, mask, _settings("dapo"), 2, 5)
    dr, _ = policy_loss(logps, old, None, adv, mask, _settings("dr_grpo"), 2, 5)
    assert float(grpo) == pytest.approx(-1.0)  # mean per sequence, then over sequences
    assert float(dapo) == pytest.approx(-1.0)  # every token the same weight
    assert float(dr) == pytest.approx(-5 / 20)  # token sum / (sequences x max_new_tokens)
    (g,) = torch.autograd.grad(grpo, logps)
    assert float(g[1, 0]) == pytest.approx(4 * float(g[0, 0]))  # short reply: bigger per token


def test_micro_batches_add_up_to_the_whole_batch_loss():
    torch.manual_seed(0)
    logps, old = torch.randn(4, 6) * 0.1, torch.randn(4, 6) * 0.1
    mask = (torch.rand(4, 6) > 0.3).float()
    adv = torch.randn(4)
    tokens = int(mask.sum())
    for kind in ("grpo", "dapo", "dr_grpo"):
        whole, _ = policy_loss(logps, old, None, adv, mask, _settings(kind), 4, tokens)
        parts = [
            policy_loss(logps[i : i + 2], old[i : i + 2], None, adv[i : i + 2],
                        mask[i : i + 2], _settings(kind), 4, tokens)[0]
            for i in (0, 2)
        ]  # fmt: skip
        assert float(sum(parts)) == pytest.approx(float(whole), rel=1e-5)


def test_kl_term_is_zero_at_the_reference_and_positive_away_from_it():
    logps = torch.full((1, 3), -1.0)
    mask = torch.ones(1, 3)
    adv = torch.zeros(1)
    _, same = policy_loss(logps, logps, logps, adv, mask, _settings("dapo", 0.1), 1, 3)
    assert same["kl_sum"] == pytest.approx(0.0)
    loss, away = policy_loss(logps, logps, logps - 0.5, adv, mask, _settings("dapo", 0.1), 1, 3)
    assert away["kl_sum"] > 0 and float(loss) > 0  # beta > 0 adds it to the loss


def test_overlong_penalty_is_soft_over_the_buffer():
    assert overlong_penalty(400, 600, 100, 1.0) == 0.0
    assert overlong_penalty(500, 600, 100, 1.0) == 0.0
    assert overlong_penalty(550, 600, 100, 1.0) == pytest.approx(-0.5)
    assert overlong_penalty(600, 600, 100, 0.5) == pytest.approx(-0.5)
    assert overlong_penalty(600, 600, 0, 1.0) == 0.0


def _sampler(**kw) -> CurriculumSampler:
    families = {"easy": [0, 1], "hard": [2, 3], "moving": [4, 5]}
    return CurriculumSampler(families, seed=3, **kw)


def test_curriculum_favours_progress_and_headroom_but_starves_no_family():
    sampler = _sampler(min_share=0.3)
    for _ in range(20):
        sampler.update("easy", [1.0, 1.0])
        sampler.update("hard", [0.0, 0.0])
    for value in [0.1 * i for i in range(10)]:
        sampler.update("moving", [value, value])
    weights = sampler.weights()
    assert sum(weights.values()) == pytest.approx(1.0)
    assert weights["moving"] > weights["easy"] and weights["hard"] > weights["easy"]
    assert min(weights.values()) >= 0.3 / 3 - 1e-9
    draws = sampler.draw(3000)
    share_easy = sum(d in (0, 1) for d in draws) / len(draws)
    assert share_easy == pytest.approx(weights["easy"], abs=0.03)


def test_learnability_draws_where_groups_disagree_not_where_all_fail():
    sampler = _sampler(min_share=0.3, headroom=0.0, learnability=1.0, temperature=0.1)
    assert len(set(sampler.weights().values())) == 1  # nothing seen yet: every family alike
    for _ in range(10):
        sampler.update("easy", [1.0, 1.0, 1.0, 1.0])  # always solved: no advantage
        sampler.update("hard", [0.0, 0.0, 0.0, 0.0])  # never solved: no advantage either
        sampler.update("moving", [0.0, 1.0, 0.0, 1.0])  # half solved: the most to learn
    weights = sampler.weights()
    assert weights["moving"] > 0.5 and weights["hard"] == pytest.approx(weights["easy"])
    assert min(weights.values()) >= 0.3 / 3 - 1e-9
    state = sampler.state_dict()
    again = _sampler(min_share=0.3, headroom=0.0, learnability=1.0, temperature=0.1)
    again.load_state_dict(state)
    assert again.weights() == pytest.approx(weights)


def test_curriculum_names_a_family_that_regresses_while_another_gains():
    sampler = _sampler()
    for _ in range(30):
        sampler.update("easy", [0.8])
        sampler.update("hard", [0.2])
    for _ in range(6):
        sampler.update("easy", [0.2])  # falls
        sampler.update("hard", [0.9])  # rises: the overall mean hides the fall
    assert sampler.regressions() == ["easy"]


def test_curriculum_state_round_trip_draws_the_same_tasks():
    first = _sampler()
    first.update("hard", [0.5, 0.7])
    first.draw(5)
    state = first.state_dict()
    expected = first.draw(50)
    second = _sampler()
    second.load_state_dict(state)
    assert second.draw(50) == expected
    assert _sampler(enabled=False).weights() == pytest.approx({f: 1 / 3 for f in first.names})
    with pytest.raises(ValueError, match="empty"):
        CurriculumSampler({"a": [1], "b": []})


def _report(valid: bool, reward: float, checks: dict[str, float]) -> Report:
    return Report.build(valid, reward, {k: Check(v, v > 0.5) for k, v in checks.items()})


def test_check_means_ignore_absent_checks():
    reports = [
        _report(True, 1.0, {"executes": 1.0, "spec": 0.0}),
        _report(False, 0, {"executes": 0.0}),
    ]
    assert check_means(reports) == {"executes": 0.5, "spec": 0.0}


class _FakeRewards:
    """Stands in for TaskRewards to test the TRL adapter around it (the judge is tested for real
    in test_rl.py)."""

    def __init__(self) -> None:
        self.calls = 0

    def report(self, task: dict, program: str) -> Report:
        self.calls += 1
        good = "return" in program
        return _report(good, 0.9 if good else 0.0, {"tests": 1.0 if good else 0.0})

    def reward(self, task: dict, report: Report) -> float:
        return report.reward


def test_trl_style_reward_functions_share_one_validation_per_candidate():
    fake = _FakeRewards()
    composite, tests, missing = reward_functions(fake, ["tests", "spec"])  # type: ignore[arg-type]
    task = [{"id": "a"}, {"id": "b"}]
    completions = ["def f():\n    return 1", [{"role": "assistant", "content": "pass"}]]
    assert composite(None, completions, task) == [0.9, 0.0]
    assert tests(None, completions, task) == [1.0, 0.0]
    assert missing(None, completions, task) == [None, None]
    assert fake.calls == 2 and tests.__name__ == "check_tests"


def test_shaped_reward_makes_a_missed_spec_cost_what_its_weight_says():
    from training.rewards import shaped_reward

    checks = {"executes": Check(1.0, True), "spec": Check(0.97, False)}  # 3 % off: not passed
    missed = Report.build(True, 0.9, checks)
    hit = Report.build(True, 0.9, {**checks, "spec": Check(0.97, True)})
    weights = {"executes": 1.0, "spec": 3.0}
    assert shaped_reward(missed, weights) == pytest.approx((1 + 3 * 0.97) / 4)
    assert shaped_reward(missed, weights, ["spec"]) == pytest.approx(0.25)
    assert shaped_reward(hit, weights, ["spec"]) == pytest.approx(1.0)
    invalid = Report.build(False, 0.0, {"executes": Check(0.0, False)})
    assert shaped_reward(invalid, weights, ["spec"]) == 0.0
    sound_but_missed = Report.build(False, 0.9, checks)  # ran, sound geometry, spec failed
    assert shaped_reward(sound_but_missed, weights) == pytest.approx((1 + 3 * 0.97) / 4)
    assert shaped_reward(sound_but_missed, weights, strict=True) == 0.0
    assert shaped_reward(hit, weights, strict=True) == pytest.approx((1 + 3 * 0.97) / 4)


def test_near_miss_ranks_a_sound_miss_between_a_crash_and_a_success():
    from training.rewards import shaped_reward

    checks = {"executes": Check(1.0, True), "spec": Check(0.97, False)}
    weights = {"executes": 1.0, "spec": 3.0}
    crash = Report.build(False, 0.0, {"executes": Check(0.0, False)})
    miss = Report.build(False, 0.9, checks)
    hit = Report.build(True, 0.9, {**checks, "spec": Check(1.0, True)})
    rewards = [shaped_reward(r, weights, strict=True, near_miss=0.25) for r in (crash, miss, hit)]
    assert rewards == pytest.approx([0.0, 0.25 * (1 + 3 * 0.97) / 4, 1.0])


def test_near_miss_can_be_set_per_domain():
    table = RLConfig.from_dict({**BASE, "reward": {"near_miss": {"cad": 0.15}}})
    assert table.reward.near_miss_for("cad") == 0.15 and table.reward.near_miss_for("scene") == 0
    again = RLConfig.from_dict(table.to_dict())
    assert again.reward.near_miss == {"cad": 0.15}
    one = RLConfig.from_dict({**BASE, "reward": {"near_miss": 0.2}})
    assert one.reward.near_miss_for("cad") == one.reward.near_miss_for("scene") == 0.2

    from training.rewards import TaskRewards

    strict = {"strict": ["cad", "scene"], "near_miss": {"cad": 0.5}}
    shaping = RLConfig.from_dict({**BASE, "reward": strict}).reward
    rewards = TaskRewards(None, None, shaping=shaping)  # type: ignore[arg-type]
    miss = Report.build(False, 0.9, {"executes": Check(1.0, True), "spec": Check(0.5, False)})
    assert rewards.reward({"domain": "cad"}, miss) > 0.0
    assert rewards.reward({"domain": "scene"}, miss) == 0.0


def test_reward_section_overrides_one_domains_weights():
    config = RLConfig.from_dict(
        {**BASE, "reward": {"weights": {"cad": {"spec": 5.0}}, "pass_fail": ["spec"]}}
    )
    cad = config.reward.domain_weights("cad")
    assert cad["spec"] == 5.0 and cad["similarity"] == 3.0
    assert config.reward.domain_weights("scene")["spec"] == 2.0


def test_union_of_validation_intervals_and_seeds():
    assert _union([(0, 2), (1, 3), (5, 6)]) == pytest.approx(4.0)
    assert _union([]) == 0.0
    seeds = {step_seed(0, step, r, i) for step in range(5) for r in range(2) for i in range(4)}
    assert len(seeds) == 40 and step_seed(0, 1, 0, 0) == step_seed(0, 1, 0, 0)


BASE = {"data": {"tasks": "tasks.jsonl"}}


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"loss": {"type": "ppo"}}, "loss.type must be one of"),
        ({"rollout": {"group_size": 1}}, "group_size must be ≥ 2"),
        ({"rollout": {"temperature": 0}}, "rollout.temperature"),
        ({"loss": {"epsilon_low": -0.1}}, "loss.epsilon_low"),
        ({"data": {"tasks": "t.jsonl", "splits": ["train"], "heldout_splits": ["train"]}},
         "must not share a split"),
        ({"training": {"micro_batch": 5}}, "must be a multiple"),
        ({"curriculum": {"fast": 0.01, "slow": 0.5}}, "slow must not exceed"),
        ({"rollout": {"beam": 4}}, "unknown keys"),
        ({"reward": {"weights": {"cad": {"spec_ok": 2}}}}, "unknown check 'spec_ok'"),
        ({"reward": {"weights": {"cam": {"spec": 2}}}}, "unknown domain 'cam'"),
        ({"reward": {"weights": {"cad": {"spec": -1}}}}, r"reward.weights.cad.spec"),
        ({"reward": {"pass_fail": ["specs"]}}, "unknown checks"),
        ({"reward": {"strict": ["cads"]}}, "reward.strict"),
        ({"curriculum": {"learnability": -1}}, "curriculum.learnability"),
        ({"reward": {"near_miss": 1.5}}, "reward.near_miss"),
        ({"reward": {"near_miss": {"cam": 0.1}}}, "reward.near_miss: unknown domain 'cam'"),
        ({"reward": {"near_miss": {"cad": 2}}}, r"reward.near_miss.cad must be a number"),
        ({"loss": {"sft_anchor": -0.1}}, "loss.sft_anchor"),
        ({"loss": {"sft_anchor_rows": 0}}, "loss.sft_anchor_rows"),
    ],
)  # fmt: skip
def test_config_errors_name_the_key(patch, message):
    with pytest.raises(ValueError, match=message):
        RLConfig.from_dict({**BASE, **patch})


def test_config_defaults_are_consistent():
    config = RLConfig.from_dict({**BASE, "model": {"from": "somewhere"}})
    assert config.model.from_dir == "somewhere" and config.to_dict()["model"]["from"] == "somewhere"
    assert config.loss.type == "dapo" and config.loss.epsilon_high > config.loss.epsilon_low


def _group(programs: list[str], hack: bool = False) -> SimpleNamespace:
    checks = {"hack_scan": Check(0.0 if hack else 1.0, not hack)}
    judged = [SimpleNamespace(report=Report.build(not hack, 0.5, checks)) for _ in programs]
    return SimpleNamespace(programs=programs, judged=judged, task={"family": "f"})


def _record(step: int, length: float) -> dict:
    return {"step": step, "reward": 0.5, "families": {"f": {"length": length}}}


def _flags(run: Path) -> list[tuple[int, str]]:
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [(r["step"], r["kind"]) for r in map(json.loads, lines) if r.get("event") == "flag"]


def test_monitor_flags_what_should_make_a_person_look(tmp_path: Path):
    from training.rl_monitor import Monitor

    monitor = Monitor(tmp_path)
    monitor.truncate(0)
    sampler = CurriculumSampler({"f": [0], "g": [1]})
    varied = [_group(["a", "b", "c", "d"]) for _ in range(4)]
    peaked = [_group(["a", "a", "a", "b"]) for _ in range(2)] + varied[:2]
    for step in range(1, 11):  # a peaked start: half the groups alike from the first step
        monitor.step(_record(step, 100), peaked, sampler)
    assert _flags(tmp_path) == []
    monitor.step(_record(11, 240), [_group(["a"] * 4) for _ in range(4)], sampler)
    monitor.step(_record(12, 100), [_group(["x", "y", "z", "w"], hack=True)], sampler)
    for _ in range(10):
        sampler.update("g", [0.9])
    for _ in range(3):
        sampler.update("g", [0.1])
    monitor.step(_record(13, 100), varied, sampler)
    monitor.heldout({"event": "heldout", "step": 13, "valid": 0.8})
    monitor.rewards += [0.9] * 6  # the training reward rises...
    monitor.heldout(
        {"event": "heldout", "step": 19, "valid": 0.5}
    )  # ...while held-out validity falls
    assert _flags(tmp_path) == [
        (11, "length_spike"), (11, "identical_outputs"), (12, "hack_scan"),
        (13, "family_regression"), (19, "heldout_validity_down"),
    ]  # fmt: skip
    monitor.close()


def test_a_repair_turn_asks_to_fix_the_best_failing_candidate_with_its_error():
    from training.rl import Group, repair_task
    from validators.report import ErrorInfo

    task = {"id": "t1", "domain": "cad", "family": "flange", "prompt": "a flange", "spec": {}}

    def judged(reward: float, valid: bool, line: int | None = None):
        error = None if valid else ErrorInfo("execution", "boom", line)
        report = Report(valid=valid, reward=reward, checks={}, error=error)
        return SimpleNamespace(report=report, reward=reward, valid=valid)

    group = Group(task, [1], [[2], [3], [4]], ["ok", "worse", "better"], ["stop"] * 3)
    group.judged = [judged(1.0, True), judged(0.1, False, 3), judged(0.4, False, 7)]
    second = repair_task(group)
    assert second is not None and second["failed_program"] == "better"
    assert second["error"] == {"kind": "execution", "message": "boom", "line": 7}
    assert second["repair"] and second["turn"] == 2 and second["prompt"] == "a flange"
    group.judged = [judged(1.0, True)] * 3
    assert repair_task(group) is None  # nothing failed
    assert repair_task(Group({**task, "domain": "code"}, [1], [[2]], ["x"], ["stop"])) is None
