"""edprf predict: one output row per data line, in order, a status and reason per row, streamed."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from edprf_core import example_schema
from edprf_fl.cli import main
from protocol import load_classifier

SCHEMA = example_schema("bank_marketing")
HEADER = ",".join(SCHEMA.feature_names)
GOOD = "51,admin.,married,secondary,no,0,no,no,unknown,5,jun,1,-1,0,unknown"
HOSTILE = {  # line -> (expected status, text the detail must contain)
    "abc,admin.,married,secondary,no,0,no,no,unknown,5,jun,1,-1,0,unknown": ("refused", "'age': not a number"),
    ",admin.,married,secondary,no,0,no,no,unknown,5,jun,1,-1,0,unknown": ("refused", "'age': missing"),
    "51,astronaut,married,secondary,no,0,no,no,unknown,5,jun,1,-1,0,unknown": ("refused", "'job': unknown category"),
    "1000000,admin.,married,secondary,no,0,no,no,unknown,5,jun,1,-1,0,unknown": ("clipped", "'age': 1000000 clipped"),
    "51,admin.,married,secondary,no,0,no,no,unknown,5,jun,1,-1,0": ("malformed", "14 fields, expected 15"),
    '51,"admin.,married,secondary,no,0,no,no,unknown,5,jun,1,-1,0,unknown': ("malformed", "unbalanced quotes"),
}


def _predict(tmp_path, lines: list[str], *extra: str, name: str = "in.csv", out: str = "out.csv") -> pd.DataFrame:
    path = tmp_path / name
    text = "\n".join(lines) + "\n"
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    target = tmp_path / out
    assert main(["predict", str(_predict.model), str(path), "-o", str(target), *extra]) == 0
    if out.endswith(".parquet"):
        return pd.read_parquet(target)
    return pd.read_csv(
        target,
        keep_default_na=False,
        na_values={"p_no": [""], "p_yes": [""]},
        dtype={"predicted": str, "status": str, "detail": str},
    )


def _same(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Same statuses and predictions, probabilities equal up to the CSV's 6 decimals."""
    a, b = a.reset_index(drop=True), b.reset_index(drop=True)
    text = [c for c in ("status", "detail", "predicted", "decision") if c in a and c in b]
    return a[text].astype(str).equals(b[text].astype(str)) and np.allclose(
        a[["p_no", "p_yes"]].to_numpy(float), b[["p_no", "p_yes"]].to_numpy(float), rtol=0, atol=1e-6, equal_nan=True
    )


@pytest.fixture(autouse=True)
def _model(bank_model):
    _predict.model = bank_model["model"]


def test_every_line_gets_one_row_in_order_with_status_and_reason(tmp_path, bank_model, capsys):
    lines = [HEADER, GOOD, *HOSTILE, GOOD]
    out = _predict(tmp_path, lines, "--allow-clipped")  # 1 of 3 scored ages clipped: exit 4 without it
    assert list(out["line"]) == list(range(2, len(lines) + 1))
    assert out["status"].iloc[0] == "ok" and out["status"].iloc[-1] == "ok"
    for (status, reason), (_, row) in zip(HOSTILE.values(), out.iloc[1:-1].iterrows()):
        assert row["status"] == status and reason in row["detail"], (row["status"], row["detail"])
        assert (row["predicted"] != "") == (status == "clipped")
    # probabilities of the scored rows are the model's, and sum to one
    clf = load_classifier(bank_model["model"])
    good = pd.DataFrame([GOOD.split(",")], columns=list(SCHEMA.feature_names))
    assert out[["p_no", "p_yes"]].iloc[0].to_numpy() == pytest.approx(clf.predict_proba(good)[0], abs=1e-6)
    assert out.loc[out["status"] == "clipped", ["p_no", "p_yes"]].sum(axis=1).to_numpy() == pytest.approx(1, abs=1e-5)
    assert out.loc[out["status"].isin(["refused", "malformed"]), ["p_no", "p_yes"]].isna().all(axis=None)
    err = capsys.readouterr().err
    assert "parties: 3 (hospital-a, hospital-b, hospital-c)" in err and "guarantee:" in err
    assert "1 clipped, 3 refused, 2 malformed" in err
    # the test model is seeded: predicting is post-processing, of releases that are not DP, and it says so
    assert "privacy: predicting is post-processing of the parties' releases; it spends no epsilon (the model " in err
    assert "itself is NOT differentially private" in err and "DP releases" not in err


def test_a_hostile_row_changes_no_other_row(tmp_path):
    rows = [GOOD.replace("51", str(a)) for a in (25, 40, 61, 77)]
    plain = _predict(tmp_path, [HEADER, *rows], out="a.csv")
    mixed = _predict(tmp_path, [HEADER, rows[0], *HOSTILE, *rows[1:]], out="b.csv")
    kept = mixed[mixed["line"].isin([2, 2 + len(HOSTILE) + 1, 2 + len(HOSTILE) + 2, 2 + len(HOSTILE) + 3])]
    assert _same(kept, plain)


def test_chunks_do_not_change_the_output(tmp_path):
    lines = [HEADER, *[GOOD.replace("51", str(20 + i % 70)) for i in range(57)], *HOSTILE]
    one = _predict(tmp_path, lines, out="one.csv")
    many = _predict(tmp_path, lines, "--chunk-rows", "5", out="many.csv")
    assert _same(one, many) and list(one["line"]) == list(many["line"])


def test_decision_with_positive_class_and_threshold(tmp_path):
    out = _predict(
        tmp_path, [HEADER, GOOD, *HOSTILE], "--positive-class", "yes", "--threshold", "0.03", "--allow-clipped"
    )
    scored = out["status"].isin(["ok", "clipped"])
    expected = np.where(out.loc[scored, "p_yes"] >= 0.03, "yes", "no")
    assert list(out.loc[scored, "decision"]) == list(expected)
    assert (out.loc[~scored, "decision"] == "").all()


def test_separator_no_header_gzip_and_parquet(tmp_path):
    plain = _predict(tmp_path, [HEADER, GOOD, GOOD.replace("51", "30")], out="plain.csv")
    semi = _predict(
        tmp_path,
        [GOOD.replace(",", ";"), GOOD.replace("51", "30").replace(",", ";") + ";yes"],
        "--sep",
        ";",
        "--no-header",
        name="in.csv.gz",
        out="semi.csv.gz",
    )
    assert _same(semi, plain)  # a trailing label field is accepted without a header
    frame = pd.read_csv(tmp_path / "plain.csv", usecols=["line"])
    assert len(frame) == 2
    source = pd.DataFrame([GOOD.split(","), GOOD.replace("51", "30").split(",")], columns=list(SCHEMA.feature_names))
    source.to_parquet(tmp_path / "in.parquet")
    target = tmp_path / "out.parquet"
    assert main(["predict", str(_predict.model), str(tmp_path / "in.parquet"), "-o", str(target)]) == 0
    assert _same(pd.read_parquet(target), plain)


def test_a_model_from_before_a_key_rotation_is_invalid_and_says_how_to_verify_it(tmp_path, bank_model, capsys):
    """After hospital-b rotated its signing key, `edprf predict|inspect OLD_MODEL --keys DIR` said "INVALID: key id:
    expected party 'hospital-b''s key sha256:eda9..., got 'sha256:9182...'": it read like tampering, and its
    quoting was broken (walkthrough).  Still INVALID (exit 3); the text says what happened and what to do."""
    import shutil

    from protocol import generate_signing_key, key_id, load_public_key, save_public_key

    data = tmp_path / "in.csv"
    data.write_text(f"{HEADER}\n{GOOD}\n")
    keys = tmp_path / "keys-now"
    shutil.copytree(bank_model["keys"], keys)
    rotated = generate_signing_key("ed25519")
    save_public_key(rotated.public_key(), keys / "hospital-b.pub.pem")
    signed_with = key_id(load_public_key(bank_model["keys"] / "hospital-b.pub.pem"))[:23]
    said = (
        f"key id: signed with another key ({signed_with}...) than the one registered now for party 'hospital-b' "
        f"({key_id(rotated)[:23]}...): a rotated key?"
    )
    advice = "a model built before a rotation verifies with the keys registered then (runbook: 'Rotate a key'"
    out = tmp_path / "o.csv"
    assert main(["predict", str(bank_model["model"]), str(data), "-o", str(out), "--keys", str(keys)]) == 3
    err = capsys.readouterr().err
    assert "signature check failed: bad_signature: release 1 (party 'hospital-b'): " + said in err and advice in err
    assert "''s" not in err and not out.exists()
    assert main(["inspect", str(bank_model["model"]), "--keys", str(keys)]) == 3
    shown = capsys.readouterr().out
    assert shown.count("signature: verified") == 2 and f"signature: INVALID: {said}" in shown and advice in shown
    assert main(["inspect", str(bank_model["model"]), "--keys", str(bank_model["keys"])]) == 0  # the keys of then


def test_wrong_keys_exit_3_and_bad_options_are_one_line_errors(tmp_path, bank_model, capsys):
    data = tmp_path / "in.csv"
    data.write_text(f"{HEADER}\n{GOOD}\n")
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "hospital-a.pub.pem").write_bytes((bank_model["keys"] / "hospital-b.pub.pem").read_bytes())
    assert (
        main(["predict", str(bank_model["model"]), str(data), "-o", str(tmp_path / "o.csv"), "--keys", str(keys)]) == 3
    )
    assert "signature check failed" in capsys.readouterr().err
    assert (
        main(
            ["predict", str(bank_model["model"]), str(data), "-o", str(tmp_path / "o.csv"), "--positive-class", "maybe"]
        )
        == 1
    )
    assert "--positive-class 'maybe': expected one of the declared classes" in capsys.readouterr().err
    assert (
        main(["predict", str(bank_model["model"]), str(data), "-o", str(tmp_path / "o.csv"), "--threshold", "0.2"]) == 1
    )
    assert "--threshold needs --positive-class" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["predict", str(bank_model["model"]), str(data), "-o", "x.csv", "--positive", "yes"])  # no abbreviations


def test_bom_crlf_blank_lines_bad_bytes_and_a_last_line_without_newline(tmp_path):
    path = tmp_path / "odd.csv"
    bad = GOOD.replace("admin.", "adm\xffin.").encode("latin-1")  # not UTF-8: read with a replacement character
    path.write_bytes(
        b"\xef\xbb\xbf" + HEADER.encode() + b"\r\n" + GOOD.encode() + b"\r\n\r\n" + bad + b"\n" + GOOD.encode()
    )
    target = tmp_path / "odd-out.csv"
    assert main(["predict", str(_predict.model), str(path), "-o", str(target)]) == 0
    out = pd.read_csv(target, keep_default_na=False)
    assert list(out["line"]) == [2, 4, 5]  # the blank line 3 is not a record
    assert list(out["status"]) == ["ok", "refused", "ok"] and "'job': unknown category" in out["detail"][1]


def test_one_row_is_said_as_one_row(tmp_path, capsys):
    _predict(tmp_path, [HEADER, GOOD])
    err = capsys.readouterr().err
    assert "predicted 1 row (1 ok, 0 clipped, 0 refused, 0 malformed)" in err and "1 rows" not in err


def test_low_support_text_says_the_probability_is_noise_not_the_prior(tmp_path, bank_model, capsys):
    """Analyst review F3: predict and explain said a low-support row's probability was "near the prior" / "the
    prior's"; an empty bin's floored noise gives a term that is noise and often raises the rarer class (0.15 ->
    0.37).  Both now say the probability is not a risk estimate and that the noise moves it either way."""
    model, data = str(bank_model["model"]), str(bank_model["data"])
    out = tmp_path / "p.csv"
    assert main(["predict", model, data, "-o", str(out)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "rows with low support" in err and "near the prior" not in err
    assert "can move the probability either way, often toward the rarer class" in err
    assert "do not read these rows' probabilities (nor their decision) as risks" in err
    rows = pd.read_csv(out, keep_default_na=False)
    line = int(rows.loc[rows["support"].str.startswith("low"), "line"].iloc[0])
    assert main(["explain", model, data, "--line", str(line)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "the prior's" not in text and "are noise, not evidence" in text
    assert "do not read this row's probability as a risk" in text
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    assert "near the prior" not in " ".join(capsys.readouterr().out.split())
