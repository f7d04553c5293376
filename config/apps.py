from django.apps import AppConfig


class ServiceConfig(AppConfig):
    """The top layer as an app, for the commands that read every app (`manage.py wiring`). No models."""

    name = "config"
    label = "service"
