"""Module 0: small helpers."""


def helper_0_0(x):
    return x + 0


def helper_0_1(x):
    return x + 1


def helper_0_2(x):
    return x + 2


def helper_0_3(x):
    return x + 3
