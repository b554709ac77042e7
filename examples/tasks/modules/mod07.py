"""Module 7: small helpers."""


def helper_7_0(x):
    return x + 0


def helper_7_1(x):
    return x + 1


def helper_7_2(x):
    return x + 2


def helper_7_3(x):
    return x + 3


def helper_7_4(x):
    return x + 4


def helper_7_5(x):
    return x + 5


def helper_7_6(x):
    return x + 6


def helper_7_7(x):
    return x + 7
