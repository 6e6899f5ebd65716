"""acme-parl-bandit: an example of an algorithm plugin written outside the PARL repository."""

from acme_parl_bandit.bandit import BanditConfig, ContextualBandit

__all__ = ["BanditConfig", "ContextualBandit"]
