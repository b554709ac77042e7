"""Module 1: small helpers."""


def helper_1_0(x):
    return x + 0


def helper_1_1(x):
    return x + 1


def helper_1_2(x):
    return x + 2


def helper_1_3(x):
    return x + 3


def helper_1_4(x):
    return x + 4


def helper_1_5(x):
    return x + 5


def helper_1_6(x):
    return x + 6
