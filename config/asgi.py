import os

from django.conf import settings
from django.core.asgi import get_asgi_application

from config.env import require_collected_static, require_hosts_to_serve

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_asgi_application()
require_hosts_to_serve(allowed_hosts=settings.ALLOWED_HOSTS, production=settings.DEPLOYMENT == "production")
require_collected_static()
