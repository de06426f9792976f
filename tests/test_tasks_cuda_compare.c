/* PLACEHOLDER: tests the CUDA bodies of the compare codelets against their CPU bodies. */
int main(void)
{
    return 77;
}
