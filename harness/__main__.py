"""``python -m harness``: a linha de comando do harness (``harness.cli``)."""
import sys


def _load_and_run_cli() -> int:
    # O import do SDK leva 1-3 s: um Ctrl-C nesse meio tempo também vira uma linha e o código 130.
    from harness.cli import main

    return main()


try:
    from harness.cli_text import run

    code = run(_load_and_run_cli)
except KeyboardInterrupt:  # Ctrl-C nos primeiros milissegundos, antes de o próprio cli_text carregar
    print("\ninterrompido (Ctrl-C).", file=sys.stderr)
    code = 130
sys.exit(code)
