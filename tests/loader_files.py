"""Small data files in the datasets' original formats (GLUE tsv, HANS txt, FEVER jsonl), which the
loader tests and the tests of what a sweep reads write into a scratch folder."""

HANS_HEADER = ("gold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
               "sentence2_parse\tsentence1\tsentence2\tpairID\theuristic\tsubcase\ttemplate\n")


def hans_row(label, s1, s2, pair):
    parse = lambda s: "( " + s.replace(" .", " ) .")  # noqa: E731  (the binary-parse columns)
    return (f"{label}\t{parse(s1)}\t{parse(s2)}\t(ROOT (S {s1}))\t(ROOT (S {s2}))\t{s1}\t{s2}\t{pair}\t"
            "lexical_overlap\tln_subject/object_swap\ttemp1\n")


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_hans(folder, name="heuristics_evaluation_set.txt"):
    return write(folder / "nli" / name, HANS_HEADER
                 + hans_row("non-entailment", "The doctor saw the lawyer .", "The lawyer saw the doctor .", "ex0")
                 + hans_row("entailment", "The doctor near the actor danced .", "The actor danced .", "ex1")
                 + hans_row("non-entailment", "The judge by the actor stopped .", "The actor stopped .", "ex2"))


QQP_HEADER = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"


def write_paraphrase_files(folder, paws_qqp: bool):
    root = folder / "paraphrase"
    # A question with a line break splits its row in two short rows, as in GLUE's QQP train.tsv.
    write(root / "train.tsv", QQP_HEADER
          + "0\t1\t2\tHow do I learn Python?\tWhat is the best way to learn Python?\t1\n"
          + "1\t3\t4\tWhy is the sky blue?\tWhy is\n"
          + "the sea blue?\t0\n"
          + "2\t5\t6\tWho wrote Hamlet?\tWho is the author of Hamlet?\t1\n")
    write(root / "dev.tsv", QQP_HEADER + "7\t9\t10\tIs tea healthy?\tIs coffee healthy?\t0\n")
    write(root / "paws_wiki" / "test.tsv", "id\tsentence1\tsentence2\tlabel\n1\tA b c .\tC b a .\t0\n")
    if paws_qqp:
        write(root / "paws_qqp" / "dev_and_test.tsv",
              "id\tsentence1\tsentence2\tlabel\n5\tHow can I be a good geologist ?\t"
              "What should I do to be a great geologist ?\t1\n")
        write(root / "paws_qqp" / "train.tsv", "id\tsentence1\tsentence2\tlabel\n6\tG0 ?\tG1 ?\t0\n")
    return root


def write_factcheck_files(folder):
    root = folder / "factcheck"
    write(root / "fever.train.jsonl",
          '{"id": 1, "claim": "Paris is in France.", "evidence": "Paris is the capital of France.", '
          '"gold_label": "SUPPORTS"}\n'
          '{"id": 2, "claim": "Paris is in Spain.", "evidence": "Paris is the capital of France.", '
          '"gold_label": "REFUTES"}\n'
          '{"id": 3, "claim": "Paris has a zoo.", "evidence": "Paris is a city.", '
          '"gold_label": "NOT ENOUGH INFO"}\n')
    write(root / "fever.dev.jsonl",
          '{"claim": "Rome is in Italy.", "evidence": "Rome is the capital of Italy.", "gold_label": "SUPPORTS"}\n')
    write(root / "symmetric_v0.1_fever_symmetric_generated.jsonl",
          '{"id": 7, "claim": "Oslo is not in Norway.", "evidence_sentence": "Oslo is in Norway.", '
          '"label": "REFUTES"}\n')
    v2 = ('{"id": 8, "claim": "Bern is in Switzerland.", "evidence": "Bern is the Swiss capital.", '
          '"gold_label": "SUPPORTS", "sentence1": "x", "sentence2": "y"}\n')
    write(root / "symmetric_v0.2_fever_symmetric_test.jsonl", v2)
    write(root / "symmetric_v0.2_fever_symmetric_dev.jsonl", v2)
    return root
