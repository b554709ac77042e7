"""Beta: a few functions."""


def beta_0(value):
    return value * 2


def beta_1(value):
    return value * 3


def beta_2(value):
    return value * 4


def beta_3(value):
    return value * 5
