"""Rewards and judges shared by RL and evaluation: math (math-verify), code (Firejail), think-tag shaping."""
from klear_lib.rewards.code import code_reward, code_rewards, execute, ExecutionResult, SandboxUnavailable
from klear_lib.rewards.judge import correct, reward, row_tests
from klear_lib.rewards.math import is_correct, math_reward, math_rewards

__all__ = ["math_reward", "math_rewards", "is_correct", "code_reward", "code_rewards", "execute",
           "ExecutionResult", "SandboxUnavailable", "reward", "correct", "row_tests"]
