"""Module 8: small helpers."""


def helper_8_0(x):
    return x + 0


def helper_8_1(x):
    return x + 1


def helper_8_2(x):
    return x + 2


def helper_8_3(x):
    return x + 3


def helper_8_4(x):
    return x + 4
