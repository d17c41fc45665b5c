"""Tuning on private data spends epsilon: an accountant adds up every fit and refuses the one over its cap.

Run: python examples/tuning_costs_epsilon.py
"""

from sklearn.model_selection import cross_val_score

from edprf_core import BudgetAccountant, BudgetExceededError, EDPRFClassifier, load_embedded

X, y, schema = load_embedded("wall_robot_navigation")

accountant = BudgetAccountant(epsilon_cap=3.0)  # one accountant per dataset: its lifetime budget
clf = EDPRFClassifier(schema, epsilon=1.0, accountant=accountant)

try:  # 5 folds are 5 fits on overlapping rows: 5 x epsilon, over the cap of 3
    cross_val_score(clf, X, y, cv=5, error_score="raise")
except BudgetExceededError as exc:
    print(f"refused before training: {exc}")

print(f"spent {accountant.total} of {accountant.epsilon_cap}; {len(accountant.spends)} fits charged")
# Better: tune on public or synthetic data, then fit once on the private rows with the chosen parameters.
