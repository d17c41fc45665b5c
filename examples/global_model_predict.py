"""Three parties release signed DP forests, a coordinator merges them, and a user loads the model to predict.

What a federation does over the network, in one process (no Flower): each party encodes its release and signs
it; the coordinator decodes the untrusted bytes against the schema, its policy and the parties' public keys,
and writes the global model; anyone with the model file and the keys loads it as a scikit-learn classifier.
Run: python examples/global_model_predict.py  (the plain install is enough)
"""

import tempfile
from pathlib import Path

from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from edprf_core import EDPRFClassifier, load_embedded
from protocol import (
    PartyKeyRegistry,
    ReleasePolicy,
    build_global_model,
    decode_release,
    encode_release,
    generate_signing_key,
    load_classifier,
    save_public_key,
)

X, y, schema = load_embedded("bank_marketing")
X, X_new, y, y_new = train_test_split(X, y, train_size=12000, test_size=3000, stratify=y, random_state=0)
parties = ["hospital-a", "hospital-b", "hospital-c"]
keys = {party: generate_signing_key("ed25519") for party in parties}
registry = PartyKeyRegistry({party: key.public_key() for party, key in keys.items()})

releases = []
for i, party in enumerate(parties):  # each party, on its own rows, with its own key
    rows = slice(i * 4000, (i + 1) * 4000)
    # a release carries trees and histograms; a residual pass is one data holder's, never released
    forest = EDPRFClassifier(schema, epsilon=1.0, residual_pass=False).fit(X.iloc[rows], y.iloc[rows]).forest_
    data = encode_release(forest, party, keys[party], run_id="example-run")  # the bytes that travel
    releases.append(decode_release(data, schema, ReleasePolicy(), registry))  # the coordinator's checks

with tempfile.TemporaryDirectory() as tmp:
    model_path, keys_dir = Path(tmp) / "global-model.edprf", Path(tmp) / "keys"
    model_path.write_bytes(build_global_model(schema, releases, {"run_id": "example-run"}))
    keys_dir.mkdir()
    for party, key in keys.items():
        save_public_key(key.public_key(), keys_dir / f"{party}.pub.pem")

    clf = load_classifier(model_path, keys_dir=keys_dir)  # refuses unless every release's signature verifies
    proba = clf.predict_proba(X_new[clf.feature_names_in_])[:, list(clf.classes_).index("yes")]
    print(
        f"global model of {len(releases)} parties; ROC AUC on {len(y_new)} new rows: {roc_auc_score(y_new == 'yes', proba):.3f}"
    )
