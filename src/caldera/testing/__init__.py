"""Test kit shared by caldera's tests and users' tests: builders, scenario runner."""
