import sys

from harness.cli import main
from harness.cli_text import run

sys.exit(run(main))
