"""Every sentence a user can see, in one package: one module per subject, one constant or formatter
each, and every one of them importable from here (`from shared.reasons import X`, `reasons.X`).

SPEC.md quotes some of these word for word and scripts match them verbatim, so each one is a
constant or a small formatter here and nowhere else. Tests check them letter for letter. A new
sentence goes into the module of its subject; tests/shared/reasons/test_reasons_package.py fails when two
modules define the same name.
"""

# ruff: noqa: F401, F403
from shared.reasons.phrases import *
from shared.reasons.plans import *
from shared.reasons.runs import *
from shared.reasons.nodes import *
from shared.reasons.scheduling import *
from shared.reasons.endpoints import *
from shared.reasons.serving import *
from shared.reasons.evaluations import *
from shared.reasons.rewards import *
from shared.reasons.snapshots import *
from shared.reasons.models import *
from shared.reasons.datasets import *
from shared.reasons.api import *
from shared.reasons.local_stack import *
from shared.reasons.deployment import *
from shared.reasons.training import *
from shared.reasons.cli import *
from shared.reasons.labels import *
from shared.reasons.samples import *
