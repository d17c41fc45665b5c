"""Train a DP forest on an embedded dataset and evaluate it on held-out rows.

Run: python examples/train_central_model.py  (the plain install is enough: pip install .)
"""

from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import train_test_split

from edprf_core import EDPRFClassifier, load_embedded

# The schema holds the public bounds, categories and classes: nothing about the domain is read from the rows.
X, y, schema = load_embedded("wall_robot_navigation")
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)

# The defaults are the recommended configuration; random_state=None draws production randomness.
clf = EDPRFClassifier(schema, epsilon=1.0).fit(X_train, y_train)

proba = clf.predict_proba(X_test)
print(f"shape chosen from a DP count of the rows: {clf.forest_.n_trees} tree(s), depth {clf.max_depth_}")
print(f"accuracy on {len(y_test)} held-out rows: {accuracy_score(y_test, clf.predict(X_test)):.3f}")
print(f"ROC AUC (one-vs-rest): {roc_auc_score(y_test, proba, multi_class='ovr', labels=clf.classes_):.3f}")
# What the model's epsilon protects, and under which neighbouring relation:
print(clf.forest_.guarantee())
