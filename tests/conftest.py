"""What every test runs with: the engine started as its entry points start it (../conftest.py)."""
