"""The series the pages plot (the papers' legends), built and matched through these names alone:
a page's points are made with them and its claims read them, and a test checks that every series
a claim reads is one its page's points make (a misspelt name would read as "not measurable")."""

from __future__ import annotations


def full(loss: str) -> str:
    """The full model fine-tuned with `loss`: "full bert (poe)"."""
    return f"full bert ({loss})"


def mask(loss: str, suffix: str = "") -> str:
    """Mask training with `loss`: "mask train (poe)" (on the std fine-tuned model, every page's
    default), with a suffix saying where it departs: " on poe ft" (on the PoE fine-tuned model),
    ", pt" (on the pre-trained model), ", then std ft" (its subnetwork fine-tuned after)."""
    return f"mask train ({loss}){suffix}"


def imp(loss: str, suffix: str = "") -> str:
    """IMP with `loss`: "imp (poe)", "imp (poe) on poe ft" (mask's suffixes)."""
    return f"imp ({loss}){suffix}"


STD, POE = full("std"), full("poe")
