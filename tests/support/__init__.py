"""Helpers the tests share: store creators, servers on loopback, sample data. Test modules and
``conftest.py`` import from here, never from ``conftest.py`` or from another test module."""
