"""Errors the grader raises to its callers (never for a student's bad notebook)."""
from __future__ import annotations


class GraderError(Exception):
    """A problem the person running the grader must fix; the message is in Portuguese."""


class UnknownExercise(GraderError, LookupError):
    """An exercise name with no checks module behind it."""

    def __init__(self, name: str, known: list[str]):
        self.name = name
        self.known = list(known)
        listed = ", ".join(known) if known else "(nenhum)"
        super().__init__(
            f"Exercício desconhecido: {name!r}. Os exercícios que o corretor conhece são: {listed}."
        )


class FixtureError(GraderError):
    """One or more fixture files have the wrong shape; each problem names file and field."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        lines = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"{'Fixture com problema' if len(self.problems) == 1 else 'Fixtures com problema'}:\n{lines}")


# The operating system's reasons, in Portuguese (its own text, strerror, follows the C locale).
OS_REASONS = {
    "ENOENT": "não existe",
    "EISDIR": "é uma pasta, não um arquivo",
    "ENOTDIR": "uma parte do caminho não é uma pasta",
    "EACCES": "sem permissão",
    "EPERM": "operação não permitida",
    "ENOSPC": "o disco está cheio",
    "EDQUOT": "a cota de disco acabou",
    "EROFS": "o sistema de arquivos é somente leitura",
    "EEXIST": "já existe",
    "ENAMETOOLONG": "o nome é longo demais",
    "ELOOP": "links simbólicos em círculo",
    "EBUSY": "o arquivo está em uso",
    "EINVAL": "argumento inválido",
    "EIO": "erro de leitura ou escrita no disco",
}


def os_reason(error: OSError) -> str:
    """Why an OSError happened, in Portuguese (the error's own text when the code is unusual)."""
    import errno

    name = errno.errorcode.get(error.errno or -1, "")
    return OS_REASONS.get(name) or error.strerror or str(error)
