"""A scheduler's live dashboard, served on its metrics HTTP port (see docs/dashboard.md)."""

from .app import DashboardApp as DashboardApp
from .sampler import Sampler as Sampler
from .serving import scheduler_with_dashboard as scheduler_with_dashboard
