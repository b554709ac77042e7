"""Gamma: a few functions."""


def gamma_0(value):
    return value * 2


def gamma_1(value):
    return value * 3


def gamma_2(value):
    return value * 4
