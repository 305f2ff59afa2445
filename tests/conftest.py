"""Shared test set-up: import TensorFlow once, quietly, before any test module does."""

from helpers import environment

environment.quiet_tensorflow_logs()
