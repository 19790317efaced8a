"""`celery -A services.trainer_worker.celery_entry ...`: the Celery app for Celery's own tools
(flower, inspect), configured from the deployment config like every service."""

from shared.celery_app import make_celery
from shared.config import load_config

app = make_celery(load_config())
