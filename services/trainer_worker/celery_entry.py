"""`celery -A services.trainer_worker.celery_entry ...`: the Celery app for Celery's own tools
(flower, inspect), configured from the deployment config like every service."""

from shared.config.deployment import load_config
from shared.messaging.celery_app import make_celery

app = make_celery(load_config())
