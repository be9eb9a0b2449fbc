"""Exports of schedules: ASCII timelines, Chrome/Perfetto traces, JSON."""

from schedsearch.export.ascii import render_ascii as render_ascii
from schedsearch.export.chrome import chrome_trace as chrome_trace, write_chrome_trace as write_chrome_trace

__all__ = ["render_ascii", "chrome_trace", "write_chrome_trace"]
