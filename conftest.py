"""Repository conftest: the plugin's own tests drive pytest with pytester."""

pytest_plugins = ["pytester"]
