"""Level 3, under the crash-state explorer: every disk state a power loss can leave while
``acquire_lease`` writes lease.json (read back with the student's own ``check_fence``) and
while ``fenced_save`` writes checkpoint.json (read back with the course's loader: the
exercise asks for no checkpoint reader). The model: docs/modelo-de-queda.md."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from grader.checks.crash_states import CHECKPOINT, Durable, crash_problem, explore, explorer_state
from grader.checks.exercise_6.fixtures import EXERCISE
from grader.checks.exercise_6.lease_probe import lease_file_error, lease_lost_error
from grader.checks.framework import CheckFailed, Context, StudentProblem
from grader.checks.write_spies import bound_everywhere, observed_writes

LEASE = Durable(name="lease.json", thing="o lease", loader="check_fence",
                nothing="levanta LeaseLost para os dois tokens (não há lease)",
                old_read="só aceita o token do lease anterior")
OLD_LEASE = {"owner": "worker-a", "token": 4, "expires_at": 1000.0}
NEW_OWNER, NOW, SECONDS = "worker-b", 1010.0, 30.0   # the old lease ended ten seconds ago: it may be taken


def new_lease(old: dict | None) -> dict:
    return {"owner": NEW_OWNER, "token": (old["token"] if old else 0) + 1, "expires_at": NOW + SECONDS}


def binders(ctx: Context) -> dict:
    return {"bind": lambda spies, real: bound_everywhere(ctx, spies, real),
            "opens": lambda **kwargs: observed_writes(ctx, **kwargs)}


def lease_reader(check_fence: Callable, leases: list[dict]) -> Callable:
    """The lease a state holds, as the student's check_fence sees it: the lease whose token it
    lets through; None when it refuses both with LeaseLost (no lease, or another token). Any
    other error (LeaseFileError for a torn file) is what the state reads as."""
    lost = lease_lost_error()

    def read(path: Path) -> Any:
        for lease in leases:
            try:
                check_fence(path.parent, lease["token"])
            except lost:
                continue
            return lease
        return None

    read.__name__ = "check_fence"
    return read


COURSE_FENCE_NOTE = (" (os estados foram lidos com uma check_fence do corretor, porque a sua ainda não aceita só o "
                     "token de um lease.json bom)")


def course_check_fence(run_dir: Path, token: int) -> None:
    """The exercise's rule, for when the student's check_fence cannot tell a good lease yet."""
    path = Path(run_dir) / LEASE.name
    if not path.exists():
        raise lease_lost_error()("sem lease.json")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        record = None
    if not (isinstance(record, dict) and type(record.get("token")) is int):
        raise lease_file_error()("lease.json não é uma posse")
    if record["token"] != token:
        raise lease_lost_error()(f"a posse atual é do token {record['token']}")


def chosen_fence(ctx: Context) -> tuple[Callable, str]:
    """The student's check_fence when, on a good lease.json, it lets its token through and
    refuses the one before; the grader's otherwise (other checks grade the fence itself)."""
    check_fence = ctx.student_function("check_fence")
    folder = ctx.fresh_dir("crash-fence-probe")
    (folder / LEASE.name).write_text(json.dumps(OLD_LEASE), encoding="utf-8")

    def attempt():
        check_fence(folder, OLD_LEASE["token"])
        try:
            check_fence(folder, OLD_LEASE["token"] - 1)
        except lease_lost_error():
            return True
        return False

    attempt.__name__ = "check_fence"
    try:
        sound = ctx.call(attempt)
    except StudentProblem:
        sound = False
    return (check_fence, "") if sound else (course_check_fence, COURSE_FENCE_NOTE)


@EXERCISE.check(
    level=3,
    title="Uma queda de energia em qualquer ponto de acquire_lease deixa o lease anterior ou o novo",
    criterion=(
        "O corretor fotografa a pasta antes de cada chamada de acquire_lease ao sistema de arquivos e monta "
        "todo estado que uma queda de energia pode deixar ali (docs/modelo-de-queda.md). Em cada estado, "
        "check_fence aceita o token do lease anterior ou o do novo (nenhum, se não havia lease); depois que "
        "acquire_lease volta, só o novo: um lease que volta ao token antigo deixa o dono antigo passar pela "
        "cerca, e um lease.json ilegível para a execução."
    ),
)
def every_lease_crash_state_loads(ctx: Context) -> None:
    acquire_lease = ctx.student_function("acquire_lease")
    check_fence, note = chosen_fence(ctx)
    for first in (False, True):
        old = None if first else dict(OLD_LEASE)
        new = new_lease(old)
        folder = ctx.fresh_dir("crash-lease-first" if first else "crash-lease-over")

        def save(_new: Any, path: Path) -> None:
            acquire_lease(path.parent, NEW_OWNER, NOW, SECONDS)

        def run(old=old, new=new, folder=folder):
            return explore(save, lease_reader(check_fence, [new] + ([old] if old else [])), old, new, folder,
                           name=LEASE.name, **binders(ctx))

        run.__name__ = "acquire_lease"
        found = ctx.call(run)
        bad = found.bad()
        if bad:
            raise CheckFailed(
                crash_problem(bad[0], found.calls, first, LEASE) + note,
                expected=f"check_fence aceitando o token {new['token']} (ou, antes de acquire_lease voltar, o anterior)"
                         " em todo estado",
                observed=f"{len(bad)} de {len(found.verdicts)} estados possíveis não servem; chamadas: "
                         + " -> ".join(found.calls),
            )


@EXERCISE.check(
    level=3,
    title="Uma queda de energia em qualquer ponto de fenced_save deixa o checkpoint anterior ou o novo",
    criterion=(
        "Com uma posse válida no lease.json, o corretor monta todo estado que uma queda pode deixar durante "
        "fenced_save: lido com o load_checkpoint do curso, cada estado é o checkpoint anterior ou o novo; "
        "depois que fenced_save volta, só o novo. O lease.json não muda."
    ),
)
def every_fenced_save_crash_state_loads(ctx: Context) -> None:
    from harness.checkpoint import load_checkpoint

    fenced_save = ctx.student_function("fenced_save")
    old, new = explorer_state("anterior", 5), explorer_state("nova", 6)
    lease = json.dumps(OLD_LEASE)

    def prepare(folder: Path) -> None:
        (folder / LEASE.name).write_text(lease, encoding="utf-8")

    def save(state: Any, path: Path) -> None:
        fenced_save(path.parent, OLD_LEASE["token"], state)

    def run():
        return explore(save, load_checkpoint, old, new, ctx.fresh_dir("crash-fenced-save"), prepare=prepare,
                       **binders(ctx))

    run.__name__ = "fenced_save"
    found = ctx.call(run)
    bad = found.bad()
    if bad:
        raise CheckFailed(
            crash_problem(bad[0], found.calls, False, CHECKPOINT)
            + " (os estados foram lidos com o load_checkpoint do curso)",
            expected="o checkpoint anterior ou o novo em todo estado (só o novo depois que fenced_save volta)",
            observed=f"{len(bad)} de {len(found.verdicts)} estados possíveis não servem; chamadas: "
                     + " -> ".join(found.calls),
        )
